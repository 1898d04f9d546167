#pragma once
#include <vector>
template <class T> struct Ring { std::vector<T> v; size_t cap; Ring(size_t c): cap(c) {} void push(T x) { if (v.size() < cap) v.push_back(x); } T pop() { T x = v.front(); v.erase(v.begin()); return x; } };
