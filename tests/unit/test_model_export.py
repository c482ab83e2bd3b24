"""The int8 recipe's graph rewrite: splitting outlier channels off a MatMul keeps its output, in fp32."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from memory_store.model_export import _split_off_channels


def _graph(weight: np.ndarray, bias: np.ndarray):
    """x -> MatMul(x, W) -> Add(bias) -> y, with x of shape (batch, tokens, K)."""
    k, n = weight.shape
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="ffn/MatMul"),
        helper.make_node("Add", ["h", "b"], ["y"], name="ffn/Add"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "tokens", n])],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, x: np.ndarray) -> np.ndarray:
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def test_split_off_channels_keeps_the_output():
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(16, 5)).astype(np.float32)
    bias = rng.normal(size=5).astype(np.float32)
    x = rng.normal(size=(2, 7, 16)).astype(np.float32)
    x[..., 3] *= 40.0  # the outlier channels the split is for
    x[..., 11] *= 25.0
    model = _graph(weight, bias)
    before = _run(model, x)

    matmul = next(n for n in model.graph.node if n.op_type == "MatMul")
    small = _split_off_channels(model, [matmul], [[3, 11]])

    after = _run(model, x)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-4)
    assert small == ["ffn/MatMul_outliers/MatMul"]
    ops = [n.op_type for n in model.graph.node]
    assert ops == ["Mul", "MatMul", "Gather", "MatMul", "Add", "Add"]
    main = next(n for n in model.graph.node if n.name == "ffn/MatMul")
    assert main.input[0] == "ffn/MatMul_outliers/masked"  # the quantised MatMul never sees channels 3 and 11
    picked = numpy_helper.to_array(next(i for i in model.graph.initializer if i.name.endswith("/weight")))
    np.testing.assert_array_equal(picked, weight[[3, 11]])


def test_split_off_no_channels_leaves_the_graph():
    rng = np.random.default_rng(1)
    model = _graph(rng.normal(size=(8, 3)).astype(np.float32), np.zeros(3, np.float32))
    matmul = next(n for n in model.graph.node if n.op_type == "MatMul")
    assert _split_off_channels(model, [matmul], [[]]) == []
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Add"]
