import numpy as np
LR = 10.0
