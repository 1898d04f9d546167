#include "ring.h"
#include <cassert>

int main() {
    Ring<int> r(2);
    r.push(1); r.push(2); r.push(3);
    assert(r.pop() == 2);
    return 0;
}
