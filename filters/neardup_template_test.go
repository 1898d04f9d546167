package filters_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
)

// A templated pool shaped like the mission's (pymethods2test; see
// shared/notes/task-format.md §6 and testdata/realism/pymethods-no-solution):
// an LLM-written instruction whose preamble, requirements and notes are the
// same in every task around one method's signature, description and
// example; a shared tests/test.sh (apt and pip lines, the harness fix that
// copies the agent's .py to solution.py, pytest, a binary reward) and
// conftest.py; and a test_solution.py of each task's own.

const pymPreamble = "# Implement `%[1]s.%[2]s`\n\n" +
	"You are given a Python repository in `/app`. The repository contains a partially implemented module,\n" +
	"`/app/solution.py`, and the test suite that will be used to check it is hidden from you. Your task is to\n" +
	"implement the method described below so that it behaves exactly as specified, including its edge cases.\n\n" +
	"## Method to implement\n\n" +
	"Implement the method `%[2]s` of class `%[1]s` in `solution.py`:\n\n" +
	"```python\n%[3]s\n```\n\n"

const pymRequirements = "\n\n## Requirements\n\n" +
	"- Write your implementation in `/app/solution.py`. Keep the class name, the method name and the\n" +
	"  signature unchanged; other methods of the class may already be used by the tests.\n" +
	"- Use only the Python standard library. Do not install additional packages and do not access the network.\n" +
	"- Do not modify the tests or the test configuration. The tests import the class from `solution` and call\n" +
	"  the method directly, so any helper functions you add must live in the same file.\n" +
	"- Handle the edge cases described above (empty inputs, invalid arguments). When the description says that\n" +
	"  an exception is raised, raise exactly that exception type.\n" +
	"- Your solution will be evaluated by running the hidden test suite with `pytest` after you finish. All\n" +
	"  tests must pass for the task to count as solved.\n\n" +
	"## Notes\n\n" +
	"The environment has Python 3.12 and pytest installed. You can run your own checks with\n" +
	"`python3 -m pytest` from `/app`, but the tests used for grading are not present in the container while\n" +
	"you work.\n"

const pymTestSh = `#!/bin/bash
# Install the test dependencies (the image may have been rebuilt without them).
apt-get update -qq > /dev/null 2>&1
apt-get install -y -qq python3-pip > /dev/null 2>&1
pip install --quiet --break-system-packages pytest==8.3.4 pytest-timeout==2.3.1 2>/dev/null || true

mkdir -p /logs/verifier
cd /app

# Agents sometimes write their code under another name: grade the first .py file.
if [ ! -f /app/solution.py ]; then
  first=$(ls /app/*.py 2>/dev/null | head -n 1)
  if [ -n "$first" ]; then
    cp "$first" /app/solution.py
  fi
fi

python3 -m pytest -rA --timeout=60 -p no:cacheprovider /tests/test_solution.py
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
`

const pymConftest = `import sys

import pytest

sys.path.insert(0, "/app")


@pytest.fixture(autouse=True)
def _run_in_app(monkeypatch):
    monkeypatch.chdir("/app")


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.timeout(30))
`

const pymDockerfile = `FROM ghcr.io/example-org/ubuntu-24-04:20250610
RUN apt-get update && apt-get install -y python3 python3-pip python3-pytest bsdutils
WORKDIR /app
COPY solution.py /app/solution.py
`

const pymToml = `version = "1.0"

[metadata]
author_name = "anonymous"
author_email = "anonymous@example.com"
difficulty = "medium"
category = "python"
tags = ["python", "pymethods2test"]

[verifier]
timeout_sec = 300.0

[agent]
timeout_sec = 1800.0

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 2048
allow_internet = true
`

// pymMethod is one task's own content: the method, its description and
// example, and the checks of its hidden tests (one test function each).
type pymMethod struct {
	class, ctor, method, sig, desc, call, out string
	checks                                    []string
}

var pymMethods = []pymMethod{
	{"TextUtils", "TextUtils()", "reverse_words", "def reverse_words(self, text: str) -> str",
		"Return the words of `text` in reverse order, joined by single spaces. Leading, trailing and repeated whitespace is ignored, so a blank string gives an empty string.",
		"TextUtils().reverse_words('  hello   big world ')", "'world big hello'",
		[]string{"assert obj.reverse_words('a b c') == 'c b a'", "assert obj.reverse_words('') == ''", "assert obj.reverse_words('one') == 'one'"}},
	{"TextUtils", "TextUtils()", "is_palindrome", "def is_palindrome(self, text: str) -> bool",
		"Tell whether `text` reads the same backwards, ignoring case and every character that is not a letter or a digit. The empty string is a palindrome.",
		"TextUtils().is_palindrome('A man, a plan, a canal: Panama')", "True",
		[]string{"assert obj.is_palindrome('racecar')", "assert not obj.is_palindrome('python')", "assert obj.is_palindrome('')", "assert obj.is_palindrome('No lemon, no melon')"}},
	{"TextUtils", "TextUtils()", "count_vowels", "def count_vowels(self, text: str) -> int",
		"Count the vowels a, e, i, o and u in `text`, upper or lower case. The letter y is never counted.",
		"TextUtils().count_vowels('Programming')", "3",
		[]string{"assert obj.count_vowels('AEIOU') == 5", "assert obj.count_vowels('rhythm') == 0", "assert obj.count_vowels('') == 0"}},
	{"TextUtils", "TextUtils()", "camel_to_snake", "def camel_to_snake(self, name: str) -> str",
		"Convert a camelCase or PascalCase identifier to snake_case: an underscore goes before every upper-case letter that follows a lower-case letter or a digit, and the result is lower case.",
		"TextUtils().camel_to_snake('parseHttpResponse')", "'parse_http_response'",
		[]string{"assert obj.camel_to_snake('CamelCase') == 'camel_case'", "assert obj.camel_to_snake('already_snake') == 'already_snake'", "assert obj.camel_to_snake('version2Name') == 'version2_name'"}},
	{"TextUtils", "TextUtils()", "truncate", "def truncate(self, text: str, width: int) -> str",
		"Shorten `text` to at most `width` characters. When it is longer, cut it and end it with an ellipsis of three dots so that the whole result is exactly `width` characters long. A width below 3 raises ValueError.",
		"TextUtils().truncate('The quick brown fox', 10)", "'The qui...'",
		[]string{"assert obj.truncate('short', 10) == 'short'", "assert obj.truncate('abcdefghij', 5) == 'ab...'", "with pytest.raises(ValueError):\n        obj.truncate('abc', 2)"}},
	{"TextUtils", "TextUtils()", "run_length_encode", "def run_length_encode(self, text: str) -> str",
		"Encode `text` by replacing every run of a repeated character with the run's length followed by the character. Runs of length one are written as the bare character.",
		"TextUtils().run_length_encode('aaabccdddd')", "'3ab2c4d'",
		[]string{"assert obj.run_length_encode('') == ''", "assert obj.run_length_encode('abc') == 'abc'", "assert obj.run_length_encode('zzzzzz') == '6z'"}},
	{"TextUtils", "TextUtils()", "word_frequencies", "def word_frequencies(self, text: str) -> dict",
		"Return a dictionary mapping each lower-cased word of `text` to how often it occurs. Words are maximal runs of letters and apostrophes; punctuation separates them.",
		"TextUtils().word_frequencies('The cat saw the dog.')", "{'the': 2, 'cat': 1, 'saw': 1, 'dog': 1}",
		[]string{"assert obj.word_frequencies('') == {}", "assert obj.word_frequencies('Hi, hi! HI?') == {'hi': 3}", "assert obj.word_frequencies(\"it's fine\")[\"it's\"] == 1"}},
	{"TextUtils", "TextUtils()", "caesar_shift", "def caesar_shift(self, text: str, shift: int) -> str",
		"Shift every ASCII letter of `text` by `shift` places in the alphabet, wrapping around from z to a and keeping its case. Other characters are left unchanged; the shift may be negative.",
		"TextUtils().caesar_shift('Hello, World!', 3)", "'Khoor, Zruog!'",
		[]string{"assert obj.caesar_shift('xyz', 3) == 'abc'", "assert obj.caesar_shift('abc', -1) == 'zab'", "assert obj.caesar_shift('123', 5) == '123'"}},
	{"ListOps", "ListOps()", "chunk", "def chunk(self, items: list, size: int) -> list",
		"Split `items` into consecutive lists of `size` elements; the last list holds what is left and may be shorter. A size of zero or less raises ValueError.",
		"ListOps().chunk([1, 2, 3, 4, 5], 2)", "[[1, 2], [3, 4], [5]]",
		[]string{"assert obj.chunk([], 3) == []", "assert obj.chunk([1, 2, 3], 3) == [[1, 2, 3]]", "with pytest.raises(ValueError):\n        obj.chunk([1], 0)"}},
	{"ListOps", "ListOps()", "flatten", "def flatten(self, nested: list) -> list",
		"Flatten arbitrarily nested lists into one flat list, keeping the left-to-right order of the leaves. Tuples and strings are leaves, not sequences to flatten.",
		"ListOps().flatten([1, [2, [3, 4]], 5])", "[1, 2, 3, 4, 5]",
		[]string{"assert obj.flatten([]) == []", "assert obj.flatten([[[]]]) == []", "assert obj.flatten([(1, 2), ['ab']]) == [(1, 2), 'ab']"}},
	{"ListOps", "ListOps()", "rotate", "def rotate(self, items: list, k: int) -> list",
		"Return a new list with the elements of `items` rotated `k` places to the right. A negative `k` rotates to the left, and `k` may exceed the length of the list.",
		"ListOps().rotate([1, 2, 3, 4, 5], 2)", "[4, 5, 1, 2, 3]",
		[]string{"assert obj.rotate([], 3) == []", "assert obj.rotate([1, 2, 3], -1) == [2, 3, 1]", "assert obj.rotate([1, 2, 3], 7) == [3, 1, 2]"}},
	{"ListOps", "ListOps()", "dedupe_stable", "def dedupe_stable(self, items: list) -> list",
		"Remove repeated elements from `items`, keeping the first occurrence of each and the original order. Elements are hashable.",
		"ListOps().dedupe_stable([3, 1, 3, 2, 1])", "[3, 1, 2]",
		[]string{"assert obj.dedupe_stable([]) == []", "assert obj.dedupe_stable(['a', 'a', 'a']) == ['a']", "assert obj.dedupe_stable([1, 2, 3]) == [1, 2, 3]"}},
	{"ListOps", "ListOps()", "pairwise_sums", "def pairwise_sums(self, items: list) -> list",
		"Return the sums of neighbouring elements: element i of the result is items[i] + items[i + 1]. A list with fewer than two elements gives an empty list.",
		"ListOps().pairwise_sums([1, 2, 3, 4])", "[3, 5, 7]",
		[]string{"assert obj.pairwise_sums([5]) == []", "assert obj.pairwise_sums([-1, 1]) == [0]", "assert obj.pairwise_sums([0, 0, 0]) == [0, 0]"}},
	{"ListOps", "ListOps()", "second_largest", "def second_largest(self, items: list) -> int",
		"Return the second largest distinct value of `items`. When the list holds fewer than two distinct values, raise ValueError.",
		"ListOps().second_largest([4, 9, 9, 2])", "4",
		[]string{"assert obj.second_largest([1, 2]) == 1", "with pytest.raises(ValueError):\n        obj.second_largest([7, 7])", "assert obj.second_largest([-5, -2, -9]) == -5"}},
	{"ListOps", "ListOps()", "interleave", "def interleave(self, first: list, second: list) -> list",
		"Merge two lists by alternating their elements, starting with `first`. When one list runs out, the rest of the other is appended in order.",
		"ListOps().interleave([1, 3, 5], [2, 4])", "[1, 2, 3, 4, 5]",
		[]string{"assert obj.interleave([], [1, 2]) == [1, 2]", "assert obj.interleave(['a'], ['b', 'c', 'd']) == ['a', 'b', 'c', 'd']", "assert obj.interleave([], []) == []"}},
	{"ListOps", "ListOps()", "longest_increasing_run", "def longest_increasing_run(self, items: list) -> int",
		"Return the length of the longest run of consecutive elements in which each element is strictly greater than the one before it. An empty list gives 0.",
		"ListOps().longest_increasing_run([1, 2, 2, 3, 4, 5, 1])", "4",
		[]string{"assert obj.longest_increasing_run([]) == 0", "assert obj.longest_increasing_run([5, 4, 3]) == 1", "assert obj.longest_increasing_run([1, 2, 3]) == 3"}},
	{"MathUtils", "MathUtils()", "gcd_many", "def gcd_many(self, numbers: list) -> int",
		"Return the greatest common divisor of all the integers in `numbers`, as a non-negative integer. The divisor of an empty list is 0, and zeros in the list are ignored.",
		"MathUtils().gcd_many([12, 18, 30])", "6",
		[]string{"assert obj.gcd_many([]) == 0", "assert obj.gcd_many([0, 5]) == 5", "assert obj.gcd_many([-4, 6]) == 2"}},
	{"MathUtils", "MathUtils()", "is_prime", "def is_prime(self, n: int) -> bool",
		"Tell whether `n` is a prime number. Numbers below 2, including negative ones, are not prime.",
		"MathUtils().is_prime(97)", "True",
		[]string{"assert not obj.is_prime(1)", "assert obj.is_prime(2)", "assert not obj.is_prime(91)", "assert not obj.is_prime(-7)"}},
	{"MathUtils", "MathUtils()", "digit_root", "def digit_root(self, n: int) -> int",
		"Repeatedly sum the decimal digits of the non-negative integer `n` until a single digit remains, and return that digit. A negative `n` raises ValueError.",
		"MathUtils().digit_root(9875)", "2",
		[]string{"assert obj.digit_root(0) == 0", "assert obj.digit_root(9) == 9", "with pytest.raises(ValueError):\n        obj.digit_root(-1)"}},
	{"MathUtils", "MathUtils()", "to_roman", "def to_roman(self, n: int) -> str",
		"Write the integer `n` in Roman numerals, using the subtractive forms IV, IX, XL, XC, CD and CM. Only 1 to 3999 can be written; anything else raises ValueError.",
		"MathUtils().to_roman(1994)", "'MCMXCIV'",
		[]string{"assert obj.to_roman(4) == 'IV'", "assert obj.to_roman(3999) == 'MMMCMXCIX'", "with pytest.raises(ValueError):\n        obj.to_roman(0)"}},
	{"MathUtils", "MathUtils()", "from_roman", "def from_roman(self, numeral: str) -> int",
		"Read a Roman numeral and return its value. Letters may be upper or lower case; a letter that is not a Roman digit raises ValueError.",
		"MathUtils().from_roman('MMXXIV')", "2024",
		[]string{"assert obj.from_roman('iv') == 4", "assert obj.from_roman('MCMXCIV') == 1994", "with pytest.raises(ValueError):\n        obj.from_roman('ABC')"}},
	{"MathUtils", "MathUtils()", "fibonacci", "def fibonacci(self, n: int) -> int",
		"Return the n-th Fibonacci number, where fibonacci(0) is 0 and fibonacci(1) is 1. It must stay fast for n up to 10000, so a naive recursion is not enough.",
		"MathUtils().fibonacci(10)", "55",
		[]string{"assert obj.fibonacci(0) == 0", "assert obj.fibonacci(1) == 1", "assert obj.fibonacci(90) == 2880067194370816120"}},
	{"MathUtils", "MathUtils()", "binomial", "def binomial(self, n: int, k: int) -> int",
		"Return the binomial coefficient n choose k, the number of ways to pick k items out of n. When k is negative or larger than n the result is 0.",
		"MathUtils().binomial(5, 2)", "10",
		[]string{"assert obj.binomial(5, 0) == 1", "assert obj.binomial(3, 4) == 0", "assert obj.binomial(52, 5) == 2598960"}},
	{"MathUtils", "MathUtils()", "mean_median", "def mean_median(self, values: list) -> tuple",
		"Return a pair holding the arithmetic mean and the median of `values`. For an even count the median is the mean of the two middle values. An empty list raises ValueError.",
		"MathUtils().mean_median([3, 1, 4, 1, 5])", "(2.8, 3)",
		[]string{"assert obj.mean_median([1, 2, 3, 4]) == (2.5, 2.5)", "assert obj.mean_median([7]) == (7, 7)", "with pytest.raises(ValueError):\n        obj.mean_median([])"}},
	{"Stack", "Stack()", "peek", "def peek(self)",
		"Return the element at the top of the stack without removing it. Peeking at an empty stack raises IndexError with the message 'peek from empty stack'.",
		"s = Stack(); s.push(1); s.push(2); s.peek()", "2",
		[]string{"obj.push(7)\n    assert obj.peek() == 7", "with pytest.raises(IndexError):\n        obj.peek()", "obj.push(1)\n    obj.peek()\n    assert len(obj) == 1"}},
	{"Stack", "Stack()", "min_value", "def min_value(self)",
		"Return the smallest element currently on the stack in constant time, whatever the order of pushes and pops. An empty stack raises IndexError.",
		"s = Stack(); s.push(5); s.push(2); s.push(8); s.min_value()", "2",
		[]string{"obj.push(3)\n    obj.push(1)\n    obj.pop()\n    assert obj.min_value() == 3", "with pytest.raises(IndexError):\n        obj.min_value()"}},
	{"Queue", "Queue()", "dequeue", "def dequeue(self)",
		"Remove and return the element at the front of the queue, the one enqueued earliest. Dequeuing from an empty queue raises IndexError.",
		"q = Queue(); q.enqueue('a'); q.enqueue('b'); q.dequeue()", "'a'",
		[]string{"obj.enqueue(1)\n    obj.enqueue(2)\n    assert obj.dequeue() == 1\n    assert obj.dequeue() == 2", "with pytest.raises(IndexError):\n        obj.dequeue()"}},
	{"Queue", "Queue()", "drain", "def drain(self) -> list",
		"Remove every element from the queue and return them as a list in the order they would have been dequeued. The queue is empty afterwards.",
		"q = Queue(); q.enqueue(1); q.enqueue(2); q.drain()", "[1, 2]",
		[]string{"assert obj.drain() == []", "obj.enqueue('x')\n    obj.drain()\n    assert len(obj) == 0"}},
	{"Matrix", "Matrix([[1, 2], [3, 4]])", "transpose", "def transpose(self) -> 'Matrix'",
		"Return a new matrix whose rows are the columns of this one. The original matrix is not modified; a matrix with no rows transposes to a matrix with no rows.",
		"Matrix([[1, 2, 3], [4, 5, 6]]).transpose().rows", "[[1, 4], [2, 5], [3, 6]]",
		[]string{"assert obj.transpose().rows == [[1, 3], [2, 4]]", "assert Matrix([]).transpose().rows == []", "assert obj.rows == [[1, 2], [3, 4]]"}},
	{"Matrix", "Matrix([[1, 2], [3, 4]])", "multiply", "def multiply(self, other: 'Matrix') -> 'Matrix'",
		"Return the matrix product of this matrix and `other`. When the number of columns of this matrix differs from the number of rows of `other`, raise ValueError.",
		"Matrix([[1, 2]]).multiply(Matrix([[3], [4]])).rows", "[[11]]",
		[]string{"assert obj.multiply(Matrix([[1, 0], [0, 1]])).rows == [[1, 2], [3, 4]]", "with pytest.raises(ValueError):\n        obj.multiply(Matrix([[1, 2, 3]]))"}},
	{"Matrix", "Matrix([[1, 2], [3, 4]])", "determinant", "def determinant(self) -> float",
		"Return the determinant of a square matrix, computed by Gaussian elimination with partial pivoting. A matrix that is not square raises ValueError.",
		"Matrix([[2, 0], [0, 3]]).determinant()", "6.0",
		[]string{"assert obj.determinant() == pytest.approx(-2.0)", "assert Matrix([[5]]).determinant() == pytest.approx(5.0)", "with pytest.raises(ValueError):\n        Matrix([[1, 2]]).determinant()"}},
	{"Matrix", "Matrix([[1, 2], [3, 4]])", "spiral_order", "def spiral_order(self) -> list",
		"Return the elements of the matrix in clockwise spiral order, starting at the top-left corner and moving right along the first row.",
		"Matrix([[1, 2, 3], [4, 5, 6], [7, 8, 9]]).spiral_order()", "[1, 2, 3, 6, 9, 8, 7, 4, 5]",
		[]string{"assert obj.spiral_order() == [1, 2, 4, 3]", "assert Matrix([]).spiral_order() == []", "assert Matrix([[1], [2]]).spiral_order() == [1, 2]"}},
	{"Inventory", "Inventory()", "remove_item", "def remove_item(self, sku: str, quantity: int) -> int",
		"Take `quantity` units of the item `sku` out of stock and return how many remain. Removing more units than are in stock raises ValueError and leaves the stock unchanged; an unknown sku raises KeyError.",
		"inv = Inventory(); inv.add_item('apple', 10); inv.remove_item('apple', 3)", "7",
		[]string{"obj.add_item('pen', 5)\n    assert obj.remove_item('pen', 5) == 0", "with pytest.raises(KeyError):\n        obj.remove_item('nope', 1)", "obj.add_item('cup', 1)\n    with pytest.raises(ValueError):\n        obj.remove_item('cup', 2)"}},
	{"Inventory", "Inventory()", "low_stock", "def low_stock(self, threshold: int) -> list",
		"Return the skus whose quantity is strictly below `threshold`, sorted alphabetically. Items with zero units are included.",
		"inv = Inventory(); inv.add_item('b', 1); inv.add_item('a', 9); inv.low_stock(5)", "['b']",
		[]string{"assert obj.low_stock(10) == []", "obj.add_item('z', 0)\n    obj.add_item('y', 2)\n    assert obj.low_stock(3) == ['y', 'z']"}},
	{"Inventory", "Inventory()", "total_value", "def total_value(self, prices: dict) -> float",
		"Return the total value of the stock: the sum over all items of quantity times unit price, with prices given by sku. An item with no price raises KeyError naming the sku.",
		"inv = Inventory(); inv.add_item('pen', 4); inv.total_value({'pen': 1.5})", "6.0",
		[]string{"assert obj.total_value({}) == 0", "obj.add_item('a', 2)\n    with pytest.raises(KeyError):\n        obj.total_value({})"}},
	{"BankAccount", "BankAccount('alice', 100)", "withdraw", "def withdraw(self, amount: float) -> float",
		"Withdraw `amount` from the account and return the new balance. A non-positive amount raises ValueError, and a withdrawal larger than the balance raises InsufficientFunds without changing the balance.",
		"BankAccount('bob', 50).withdraw(20)", "30",
		[]string{"assert obj.withdraw(40) == 60", "with pytest.raises(ValueError):\n        obj.withdraw(0)", "with pytest.raises(InsufficientFunds):\n        obj.withdraw(500)"}},
	{"BankAccount", "BankAccount('alice', 100)", "transfer", "def transfer(self, other: 'BankAccount', amount: float) -> None",
		"Move `amount` from this account to `other`. The transfer is atomic: when the withdrawal fails, neither balance changes and the exception propagates.",
		"a = BankAccount('a', 10); b = BankAccount('b', 0); a.transfer(b, 4); (a.balance, b.balance)", "(6, 4)",
		[]string{"other = BankAccount('bob', 0)\n    obj.transfer(other, 30)\n    assert (obj.balance, other.balance) == (70, 30)", "other = BankAccount('bob', 0)\n    with pytest.raises(InsufficientFunds):\n        obj.transfer(other, 1000)\n    assert other.balance == 0"}},
	{"BankAccount", "BankAccount('alice', 100)", "statement", "def statement(self) -> list",
		"Return the account's transactions as a list of strings 'deposit 20.00' or 'withdraw 5.50', oldest first, amounts with two decimals. The opening balance is not a transaction.",
		"a = BankAccount('a', 0); a.deposit(20); a.withdraw(5.5); a.statement()", "['deposit 20.00', 'withdraw 5.50']",
		[]string{"assert obj.statement() == []", "obj.deposit(1)\n    assert obj.statement() == ['deposit 1.00']"}},
	{"Tokenizer", "Tokenizer()", "split_sentences", "def split_sentences(self, text: str) -> list",
		"Split `text` into sentences ending in '.', '!' or '?', keeping the punctuation and stripping surrounding whitespace. Abbreviations such as 'e.g.' and 'Dr.' do not end a sentence.",
		"Tokenizer().split_sentences('Hi there. How are you? Fine!')", "['Hi there.', 'How are you?', 'Fine!']",
		[]string{"assert obj.split_sentences('') == []", "assert obj.split_sentences('Dr. Smith is here.') == ['Dr. Smith is here.']", "assert len(obj.split_sentences('A. B. C.')) == 3"}},
	{"Tokenizer", "Tokenizer()", "tokenize_expression", "def tokenize_expression(self, expr: str) -> list",
		"Split an arithmetic expression into tokens: integers, decimal numbers, identifiers, the operators + - * / ^ and parentheses. Whitespace separates nothing more than it must; an unknown character raises SyntaxError.",
		"Tokenizer().tokenize_expression('3*(x+4.5)')", "['3', '*', '(', 'x', '+', '4.5', ')']",
		[]string{"assert obj.tokenize_expression('a ^ 2') == ['a', '^', '2']", "with pytest.raises(SyntaxError):\n        obj.tokenize_expression('1 $ 2')"}},
	{"Tokenizer", "Tokenizer()", "ngrams", "def ngrams(self, tokens: list, n: int) -> list",
		"Return the n-grams of `tokens` as tuples, in order. When there are fewer than n tokens the result is empty; n must be positive or ValueError is raised.",
		"Tokenizer().ngrams(['a', 'b', 'c'], 2)", "[('a', 'b'), ('b', 'c')]",
		[]string{"assert obj.ngrams(['a'], 2) == []", "assert obj.ngrams(['x', 'y'], 1) == [('x',), ('y',)]", "with pytest.raises(ValueError):\n        obj.ngrams(['a'], 0)"}},
	{"DateHelper", "DateHelper()", "days_between", "def days_between(self, start: str, end: str) -> int",
		"Return the number of days from `start` to `end`, both ISO dates (YYYY-MM-DD). The result is negative when `end` comes first; a malformed date raises ValueError.",
		"DateHelper().days_between('2024-01-01', '2024-03-01')", "60",
		[]string{"assert obj.days_between('2023-12-31', '2024-01-01') == 1", "assert obj.days_between('2024-01-10', '2024-01-01') == -9", "with pytest.raises(ValueError):\n        obj.days_between('2024-13-01', '2024-01-01')"}},
	{"DateHelper", "DateHelper()", "is_weekend", "def is_weekend(self, day: str) -> bool",
		"Tell whether the ISO date `day` falls on a Saturday or a Sunday.",
		"DateHelper().is_weekend('2024-06-01')", "True",
		[]string{"assert obj.is_weekend('2024-06-02')", "assert not obj.is_weekend('2024-06-03')"}},
	{"DateHelper", "DateHelper()", "add_business_days", "def add_business_days(self, day: str, count: int) -> str",
		"Return the ISO date that is `count` business days after `day`, skipping Saturdays and Sundays. A negative count moves backwards, and a count of zero on a weekend returns the same day.",
		"DateHelper().add_business_days('2024-06-07', 1)", "'2024-06-10'",
		[]string{"assert obj.add_business_days('2024-06-03', 5) == '2024-06-10'", "assert obj.add_business_days('2024-06-10', -1) == '2024-06-07'", "assert obj.add_business_days('2024-06-08', 0) == '2024-06-08'"}},
	{"DateHelper", "DateHelper()", "parse_duration", "def parse_duration(self, text: str) -> int",
		"Parse a duration such as '1h30m', '45s' or '2d4h' into a number of seconds. Units are d, h, m and s, each at most once and in that order; anything else raises ValueError.",
		"DateHelper().parse_duration('1h30m')", "5400",
		[]string{"assert obj.parse_duration('45s') == 45", "assert obj.parse_duration('2d4h') == 187200", "with pytest.raises(ValueError):\n        obj.parse_duration('5x')"}},
	{"Graph", "Graph()", "shortest_path", "def shortest_path(self, start, goal) -> list",
		"Return the shortest path from `start` to `goal` in this unweighted, undirected graph as a list of nodes including both ends, found by breadth-first search. When no path exists return an empty list.",
		"g = Graph(); g.add_edge('a', 'b'); g.add_edge('b', 'c'); g.shortest_path('a', 'c')", "['a', 'b', 'c']",
		[]string{"obj.add_edge(1, 2)\n    assert obj.shortest_path(1, 1) == [1]", "obj.add_edge(1, 2)\n    obj.add_edge(3, 4)\n    assert obj.shortest_path(1, 4) == []"}},
	{"Graph", "Graph()", "has_cycle", "def has_cycle(self) -> bool",
		"Tell whether the undirected graph contains a cycle. A self-loop is a cycle; two nodes joined by a single edge are not.",
		"g = Graph(); g.add_edge(1, 2); g.add_edge(2, 3); g.add_edge(3, 1); g.has_cycle()", "True",
		[]string{"assert not obj.has_cycle()", "obj.add_edge(1, 2)\n    assert not obj.has_cycle()", "obj.add_edge(5, 5)\n    assert obj.has_cycle()"}},
	{"Graph", "Graph()", "connected_components", "def connected_components(self) -> list",
		"Return the connected components of the graph as sorted lists of nodes, the components ordered by their smallest node.",
		"g = Graph(); g.add_edge(3, 4); g.add_edge(1, 2); g.connected_components()", "[[1, 2], [3, 4]]",
		[]string{"assert obj.connected_components() == []", "obj.add_edge(1, 2)\n    obj.add_edge(2, 3)\n    assert obj.connected_components() == [[1, 2, 3]]"}},
	{"Graph", "Graph()", "topological_order", "def topological_order(self) -> list",
		"Treat the edges as directed from the first node to the second and return the nodes in a topological order, breaking ties by the smaller node first. A directed cycle raises ValueError.",
		"g = Graph(); g.add_edge('b', 'c'); g.add_edge('a', 'b'); g.topological_order()", "['a', 'b', 'c']",
		[]string{"obj.add_edge(2, 1)\n    assert obj.topological_order() == [2, 1]", "obj.add_edge(1, 2)\n    obj.add_edge(2, 1)\n    with pytest.raises(ValueError):\n        obj.topological_order()"}},
	{"LRUCache", "LRUCache(2)", "get", "def get(self, key)",
		"Return the value stored under `key` and mark it as the most recently used entry, or return None when the key is absent. Looking a key up never evicts anything.",
		"c = LRUCache(2); c.put('a', 1); c.get('a')", "1",
		[]string{"assert obj.get('missing') is None", "obj.put('a', 1)\n    obj.put('b', 2)\n    obj.get('a')\n    obj.put('c', 3)\n    assert obj.get('b') is None"}},
	{"LRUCache", "LRUCache(2)", "put", "def put(self, key, value) -> None",
		"Store `value` under `key`. When the cache is full and the key is new, evict the least recently used entry first; updating an existing key refreshes it without evicting.",
		"c = LRUCache(1); c.put('a', 1); c.put('b', 2); c.get('a')", "None",
		[]string{"obj.put('a', 1)\n    obj.put('a', 5)\n    assert obj.get('a') == 5", "obj.put('a', 1)\n    obj.put('b', 2)\n    obj.put('c', 3)\n    assert len(obj) == 2"}},
	{"Polynomial", "Polynomial([1, 0, 2])", "evaluate", "def evaluate(self, x: float) -> float",
		"Evaluate the polynomial at `x` with Horner's rule. Coefficients are stored lowest degree first, so Polynomial([1, 0, 2]) is 1 + 2x^2.",
		"Polynomial([1, 0, 2]).evaluate(3)", "19",
		[]string{"assert obj.evaluate(0) == 1", "assert obj.evaluate(-1) == 3", "assert Polynomial([]).evaluate(5) == 0"}},
	{"Polynomial", "Polynomial([1, 0, 2])", "derivative", "def derivative(self) -> 'Polynomial'",
		"Return the derivative as a new polynomial. The derivative of a constant is the zero polynomial, whose coefficient list is empty.",
		"Polynomial([5, 3, 1]).derivative().coeffs", "[3, 2]",
		[]string{"assert obj.derivative().coeffs == [0, 4]", "assert Polynomial([7]).derivative().coeffs == []"}},
	{"Polynomial", "Polynomial([1, 0, 2])", "add", "def add(self, other: 'Polynomial') -> 'Polynomial'",
		"Return the sum of two polynomials. Trailing zero coefficients of the result are removed, so adding a polynomial to its negation gives the zero polynomial.",
		"Polynomial([1, 2]).add(Polynomial([0, -2, 3])).coeffs", "[1, 0, 3]",
		[]string{"assert obj.add(Polynomial([-1, 0, -2])).coeffs == []", "assert obj.add(Polynomial([])).coeffs == [1, 0, 2]"}},
	{"Interval", "Interval(1, 5)", "overlaps", "def overlaps(self, other: 'Interval') -> bool",
		"Tell whether this closed interval shares at least one point with `other`. Intervals that only touch at an end point do overlap.",
		"Interval(1, 5).overlaps(Interval(5, 9))", "True",
		[]string{"assert not obj.overlaps(Interval(6, 8))", "assert obj.overlaps(Interval(0, 1))", "assert obj.overlaps(Interval(2, 3))"}},
	{"Interval", "Interval(1, 5)", "merge_all", "def merge_all(self, intervals: list) -> list",
		"Merge a list of intervals, given as (start, end) pairs in any order, into the smallest sorted list of disjoint intervals covering the same points.",
		"Interval(0, 0).merge_all([(1, 3), (2, 6), (8, 10)])", "[(1, 6), (8, 10)]",
		[]string{"assert obj.merge_all([]) == []", "assert obj.merge_all([(5, 6), (1, 2)]) == [(1, 2), (5, 6)]", "assert obj.merge_all([(1, 4), (4, 5)]) == [(1, 5)]"}},
	{"Fraction", "Fraction(1, 2)", "simplify", "def simplify(self) -> 'Fraction'",
		"Return the fraction in lowest terms with a positive denominator. A zero denominator raises ZeroDivisionError when the fraction is created, not here.",
		"Fraction(6, -8).simplify()", "Fraction(-3, 4)",
		[]string{"assert Fraction(10, 5).simplify() == Fraction(2, 1)", "assert Fraction(0, 7).simplify() == Fraction(0, 1)", "assert obj.simplify() == Fraction(1, 2)"}},
	{"Fraction", "Fraction(1, 2)", "to_mixed", "def to_mixed(self) -> str",
		"Write the fraction as a mixed number such as '2 1/3', or as '-1 1/2' for negative values. Whole numbers are written without a fractional part and proper fractions without a whole part.",
		"Fraction(7, 3).to_mixed()", "'2 1/3'",
		[]string{"assert obj.to_mixed() == '1/2'", "assert Fraction(4, 2).to_mixed() == '2'", "assert Fraction(-3, 2).to_mixed() == '-1 1/2'"}},
	{"URLParser", "URLParser()", "query_params", "def query_params(self, url: str) -> dict",
		"Return the query parameters of `url` as a dictionary of lists of values, decoding percent escapes and plus signs. A URL without a query gives an empty dictionary.",
		"URLParser().query_params('https://x.org/p?a=1&b=2&a=3')", "{'a': ['1', '3'], 'b': ['2']}",
		[]string{"assert obj.query_params('https://x.org/') == {}", "assert obj.query_params('http://h/?q=a+b%21') == {'q': ['a b!']}"}},
	{"URLParser", "URLParser()", "normalize", "def normalize(self, url: str) -> str",
		"Normalise a URL: lower-case the scheme and host, drop the default port of the scheme, remove dot segments from the path and drop an empty fragment.",
		"URLParser().normalize('HTTP://Example.COM:80/a/./b/../c#')", "'http://example.com/a/c'",
		[]string{"assert obj.normalize('https://h:443/') == 'https://h/'", "assert obj.normalize('http://h:8080/x') == 'http://h:8080/x'"}},
	{"Scheduler", "Scheduler()", "next_free_slot", "def next_free_slot(self, after: int, length: int) -> int",
		"Return the earliest start time at or after `after` at which a job of `length` minutes fits between the booked intervals. Booked intervals are half-open [start, end).",
		"s = Scheduler(); s.book(0, 30); s.book(40, 60); s.next_free_slot(0, 10)", "30",
		[]string{"assert obj.next_free_slot(5, 10) == 5", "obj.book(0, 10)\n    assert obj.next_free_slot(0, 5) == 10"}},
	{"Scheduler", "Scheduler()", "book", "def book(self, start: int, end: int) -> None",
		"Book the half-open interval [start, end). A booking that overlaps an existing one raises ValueError and is not recorded; an empty or reversed interval also raises ValueError.",
		"s = Scheduler(); s.book(10, 20); s.bookings", "[(10, 20)]",
		[]string{"obj.book(0, 5)\n    obj.book(5, 9)\n    assert obj.bookings == [(0, 5), (5, 9)]", "obj.book(0, 5)\n    with pytest.raises(ValueError):\n        obj.book(4, 6)", "with pytest.raises(ValueError):\n        obj.book(3, 3)"}},
	{"CSVReader", "CSVReader()", "parse_line", "def parse_line(self, line: str) -> list",
		"Split one CSV line into fields. Fields may be quoted with double quotes, in which case they can hold commas, and a doubled quote inside a quoted field stands for one quote character.",
		"CSVReader().parse_line('a,\"b,c\",d')", "['a', 'b,c', 'd']",
		[]string{"assert obj.parse_line('') == ['']", "assert obj.parse_line('\"say \"\"hi\"\"\",x') == ['say \"hi\"', 'x']"}},
	{"CSVReader", "CSVReader()", "column_sums", "def column_sums(self, rows: list) -> dict",
		"Given rows as dictionaries from a header name to a string value, return the sum of every column whose values all parse as numbers. Other columns are left out of the result.",
		"CSVReader().column_sums([{'a': '1', 'b': 'x'}, {'a': '2.5', 'b': 'y'}])", "{'a': 3.5}",
		[]string{"assert obj.column_sums([]) == {}", "assert obj.column_sums([{'n': '3'}, {'n': '-1'}]) == {'n': 2}"}},
	{"Validator", "Validator()", "is_valid_email", "def is_valid_email(self, address: str) -> bool",
		"Tell whether `address` is a plausible e-mail address: one '@', a non-empty local part without spaces, and a domain made of at least two dot-separated labels of letters, digits and hyphens.",
		"Validator().is_valid_email('user.name@example.org')", "True",
		[]string{"assert not obj.is_valid_email('no-at-sign')", "assert not obj.is_valid_email('a@b')", "assert obj.is_valid_email('x@mail.example-site.com')"}},
	{"Validator", "Validator()", "check_password", "def check_password(self, password: str) -> list",
		"Return the list of rules `password` breaks, as short codes: 'length' when it has fewer than 12 characters, 'digit' without a digit, 'upper' without an upper-case letter and 'symbol' without a character that is neither a letter nor a digit.",
		"Validator().check_password('short')", "['length', 'digit', 'upper', 'symbol']",
		[]string{"assert obj.check_password('Correct-Horse-9') == []", "assert obj.check_password('alllowercase!!1') == ['upper']"}},
}

// pymTask writes one task of the templated pool; firstVar, when set, names
// the object of the first test instead of obj.
func pymTask(m pymMethod, firstVar string) map[string]string {
	instr := fmt.Sprintf(pymPreamble, m.class, m.method, m.sig) + m.desc +
		fmt.Sprintf("\n\n### Example\n\n```python\n>>> %s\n%s\n```", m.call, m.out) + pymRequirements
	var tests strings.Builder
	fmt.Fprintf(&tests, "import pytest\n\nfrom solution import %s\n", m.class)
	if strings.Contains(strings.Join(m.checks, ""), "InsufficientFunds") {
		tests.WriteString("from solution import InsufficientFunds\n")
	}
	for i, c := range m.checks {
		v := "obj"
		if i == 0 && firstVar != "" {
			v, c = firstVar, strings.ReplaceAll(c, "obj", firstVar)
		}
		fmt.Fprintf(&tests, "\n\ndef test_%s_%d():\n    %s = %s\n    %s\n", m.method, i+1, v, m.ctor, c)
	}
	return map[string]string{
		"instruction.md":          instr,
		"task.toml":               pymToml,
		"environment/Dockerfile":  pymDockerfile,
		"environment/solution.py": fmt.Sprintf("class %s:\n    %s:\n        raise NotImplementedError\n", m.class, m.sig),
		"tests/test.sh":           pymTestSh,
		"tests/conftest.py":       pymConftest,
		"tests/test_solution.py":  tests.String(),
	}
}

// pymEdited is a lightly edited copy of a task: the description re-wrapped
// and one word of it changed, other numbers in the example and the tests,
// and a local variable of one test renamed.
func pymEdited(m pymMethod) map[string]string {
	m.desc = strings.Replace(strings.ReplaceAll(m.desc, ". ", ".\n"), " the ", " its ", 1)
	m.call = strings.NewReplacer("1", "4", "2", "7", "3", "8").Replace(m.call)
	m.out = strings.NewReplacer("1", "4", "2", "7", "3", "8").Replace(m.out)
	checks := append([]string(nil), m.checks...)
	for i := range checks {
		checks[i] = strings.NewReplacer("1", "6", "2", "9", "5", "3").Replace(checks[i])
	}
	m.checks = checks
	return pymTask(m, "account")
}

// TestNearDupTemplatedPool: in a pool whose tasks share a long instruction
// template and a test harness, distinct tasks (each its own method,
// description, example and tests) are not near-duplicates of each other,
// whatever the template makes their whole texts share, while a lightly
// edited copy of one of them still is, naming it.
func TestNearDupTemplatedPool(t *testing.T) {
	tasks := map[string]map[string]string{}
	for i, m := range pymMethods {
		tasks[fmt.Sprintf("pymethods2test-%04d", i)] = pymTask(m, "")
	}
	orig := slices.IndexFunc(pymMethods, func(m pymMethod) bool { return m.method == "withdraw" })
	tasks["pymethods2test-9000"] = pymEdited(pymMethods[orig])
	if len(pymMethods) < 60 {
		t.Fatalf("only %d distinct tasks", len(pymMethods))
	}
	got := runStages(t, writeTaskDirs(t, tasks), []string{"validate", "dedup", "near_dup"}, filters.Options{})
	dropped := 0
	for i := range pymMethods {
		path := fmt.Sprintf("pymethods2test-%04d", i)
		if d := got[path]; d.Stage != filters.StageNearDup || d.Verdict != pipeline.Keep {
			dropped++
			t.Errorf("%s (%s.%s): %s %s %s", path, pymMethods[i].class, pymMethods[i].method, d.Stage, d.Reason, d.Detail)
		}
	}
	if dropped > 0 {
		t.Logf("%d of %d distinct templated tasks dropped", dropped, len(pymMethods))
	}
	want := fmt.Sprintf("near-duplicate of pymethods2test-%04d: Jaccard ", orig)
	if d := got["pymethods2test-9000"]; d.Reason != filters.ReasonNearDuplicate || !strings.Contains(d.Detail, want) {
		t.Errorf("edited copy of pymethods2test-%04d: %s %s %s", orig, d.Stage, d.Reason, d.Detail)
	}
}

// TestNearDupGenericInstructions: tasks whose instruction is nothing but
// the pool's template (one generic instruction for the whole family, the
// work defined by the tests) are not near-duplicates of each other by
// that: only their tests differ, and the tests alone never drop.
func TestNearDupGenericInstructions(t *testing.T) {
	generic := "# Make the hidden tests pass\n\n" +
		"You are given a Python repository in `/app`. Some methods of the classes in `/app/solution.py` raise\n" +
		"`NotImplementedError`. Implement them so that the hidden test suite passes." + pymRequirements
	tasks := map[string]map[string]string{}
	for i, m := range pymMethods {
		task := pymTask(m, "")
		task["instruction.md"] = generic
		tasks[fmt.Sprintf("generic-%04d", i)] = task
	}
	got := runStages(t, writeTaskDirs(t, tasks), []string{"validate", "dedup", "near_dup"}, filters.Options{})
	dropped := 0
	for i := range pymMethods {
		path := fmt.Sprintf("generic-%04d", i)
		if d := got[path]; d.Stage != filters.StageNearDup || d.Verdict != pipeline.Keep {
			dropped++
			if dropped <= 3 {
				t.Errorf("%s: %s %s %s", path, d.Stage, d.Reason, d.Detail)
			}
		}
	}
	if dropped > 0 {
		t.Errorf("%d of %d tasks with the generic instruction dropped", dropped, len(pymMethods))
	}
}

// TestNearDupSmallTemplatedPool: the real-pool shapes at a size below the
// boilerplate floor (20 tasks, as a user's first try): the same templated
// tasks, and tasks that keep their own tests in environment/ while tests/
// holds only the shared harness that runs them (the mission's pool). No
// distinct task is dropped; the edited copy still is.
func TestNearDupSmallTemplatedPool(t *testing.T) {
	for _, shape := range []string{"tests in tests/", "project tests in environment/"} {
		t.Run(shape, func(t *testing.T) {
			// 20 tasks around the one the edited copy copies.
			at := slices.IndexFunc(pymMethods, func(m pymMethod) bool { return m.method == "withdraw" })
			lo := max(0, min(at-10, len(pymMethods)-20))
			sel := pymMethods[lo : lo+20]
			orig := at - lo
			tasks := map[string]map[string]string{}
			for i, m := range sel {
				tasks[fmt.Sprintf("pymethods2test-%04d", i)] = pymTask(m, "")
			}
			tasks["pymethods2test-9000"] = pymEdited(sel[orig])
			if shape != "tests in tests/" {
				for _, files := range tasks {
					files["environment/tests/test_solution.py"] = files["tests/test_solution.py"]
					delete(files, "tests/test_solution.py")
				}
			}
			got := runStages(t, writeTaskDirs(t, tasks), []string{"validate", "dedup", "near_dup"}, filters.Options{})
			for i, m := range sel {
				path := fmt.Sprintf("pymethods2test-%04d", i)
				if d := got[path]; d.Stage != filters.StageNearDup || d.Verdict != pipeline.Keep {
					t.Errorf("%s (%s.%s): %s %s %s", path, m.class, m.method, d.Stage, d.Reason, d.Detail)
				}
			}
			want := fmt.Sprintf("near-duplicate of pymethods2test-%04d: Jaccard ", orig)
			if d := got["pymethods2test-9000"]; d.Reason != filters.ReasonNearDuplicate || !strings.Contains(d.Detail, want) {
				t.Errorf("edited copy of pymethods2test-%04d: %s %s %s", orig, d.Stage, d.Reason, d.Detail)
			}
		})
	}
}
