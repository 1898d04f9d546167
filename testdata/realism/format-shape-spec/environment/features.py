def build(path):
    pass
