"""Tensors of plain floats: enough for a loss, a backward pass and an optimizer update."""
import random


class Tensor:
    def __init__(self, value=0.0, requires_grad=False):
        self.value = float(value)
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()  # (tensor, d self / d tensor)

    def _op(self, other, value, da, db):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(value, self.requires_grad or other.requires_grad)
        out._parents = ((self, da), (other, db))
        return out

    def __add__(self, other):
        o = other.value if isinstance(other, Tensor) else float(other)
        return self._op(other, self.value + o, 1.0, 1.0)

    __radd__ = __add__

    def __sub__(self, other):
        o = other.value if isinstance(other, Tensor) else float(other)
        return self._op(other, self.value - o, 1.0, -1.0)

    def __mul__(self, other):
        o = other.value if isinstance(other, Tensor) else float(other)
        return self._op(other, self.value * o, o, self.value)

    __rmul__ = __mul__

    def item(self):
        return self.value

    def detach(self):
        return Tensor(self.value)

    def backward(self, gradient=None):
        stack = [(self, 1.0)]
        while stack:
            t, g = stack.pop()
            if t.requires_grad and not t._parents:
                t.grad = (t.grad or 0.0) + g
            for parent, d in t._parents:
                stack.append((parent, g * d))

    def __repr__(self):
        return "tensor(%r)" % self.value


def tensor(value, requires_grad=False):
    return Tensor(value, requires_grad)


def randn(*shape):
    return Tensor(random.gauss(0.0, 1.0))
