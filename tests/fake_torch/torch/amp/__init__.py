class autocast:
    def __init__(self, device_type="cpu", dtype=None, enabled=True):
        self.device, self.fast_dtype, self.enabled = device_type, dtype, enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
