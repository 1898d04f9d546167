# an old copy of the verifier left in the context
