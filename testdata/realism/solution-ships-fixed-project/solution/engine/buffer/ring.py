class Ring:
    def __init__(self, cap):
        self.cap, self.items = cap, []
    def put(self, x):
        self.items = (self.items + [x])[-self.cap:]
