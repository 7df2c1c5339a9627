class _Flags:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class _Cudnn(_Flags):
    def version(self):
        return None


cudnn = _Cudnn(benchmark=False, deterministic=False, enabled=True, allow_tf32=True)
cuda = _Flags(matmul=_Flags(allow_tf32=False))


class cpu:
    @staticmethod
    def get_cpu_capability():
        return "DEFAULT"
