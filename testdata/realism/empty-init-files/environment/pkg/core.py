def add(a, b):
    raise NotImplementedError
