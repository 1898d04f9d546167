class Ring:
    def __init__(self, cap):
        self.cap, self.items = cap, []
    def put(self, x):
        if len(self.items) < self.cap:
            self.items.append(x)
