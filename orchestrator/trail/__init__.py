"""The audit trail a store keeps beside its chunks (charter versions, the last synthesis) and the calls the
stages make into it. Below every stage: it imports no stage, and harvest, synthesis and clean import it."""
