def validate(doc):
    raise NotImplementedError
