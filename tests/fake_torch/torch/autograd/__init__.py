def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    for t in tensors if isinstance(tensors, (list, tuple)) else (tensors,):
        t.backward()


def grad(outputs, inputs, **kwargs):
    return tuple(0.0 for _ in inputs)
