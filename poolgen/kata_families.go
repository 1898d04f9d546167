package poolgen

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// A kata family is one function contract with a few variants. Variants
// change the function and argument names, the wording and small spec details
// (case-insensitivity, 0- or 1-indexing, ...). The Python sources live in
// katas/ (one file per source, loaded by kataSource; see katas/README.md) and
// use $FN for the function name and $A, $B, $C for the argument names once
// loaded; the first line of a reference is always the signature shown to the
// solver. This file holds the rest: test-case generators, wording, mutations.
//
// Wrong implementations (for the wrong_oracle defect) are either a mutation
// of the reference (pairs of old/new substrings, every occurrence replaced)
// or a full alternative source. They are "subtly" wrong: an off-by-one, a
// swapped loop, a missed spec detail.
type kataFamily struct {
	ID         string
	Category   string
	Difficulty string
	Ref        string   // default reference for variants without their own
	Wrong      []string // default mutation
	Gen        func(r *rand.Rand, v int) []any
	Variants   []kataVariant
}

type kataVariant struct {
	Fn       string
	Args     []string
	Summary  string
	Spec     string
	Ref      string
	Wrong    []string
	WrongRef string
}

func (f *kataFamily) ref(v int) string {
	if f.Variants[v].Ref != "" {
		return f.Variants[v].Ref
	}
	return f.Ref
}

// wrong returns the unexpanded wrong implementation of variant v.
func (f *kataFamily) wrong(v int) string {
	vv := f.Variants[v]
	if vv.WrongRef != "" {
		return vv.WrongRef
	}
	muts := vv.Wrong
	if muts == nil {
		muts = f.Wrong
	}
	src := f.ref(v)
	for i := 0; i+1 < len(muts); i += 2 {
		src = strings.ReplaceAll(src, muts[i], muts[i+1])
	}
	return src
}

func (vv kataVariant) expand(s string) string {
	pairs := []string{"$FN", vv.Fn}
	for i, a := range vv.Args {
		pairs = append(pairs, "$"+string(rune('A'+i)), a)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

var kataFamilies = []*kataFamily{
	{
		ID: "run_length_encode", Category: "strings", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			if chance(r, 0.08) {
				return []any{""}
			}
			var b strings.Builder
			prev := byte(0)
			for n := rint(r, 1, 7); n > 0; n-- {
				c := "abcxyz"[r.IntN(6)]
				for c == prev {
					c = "abcxyz"[r.IntN(6)]
				}
				prev = c
				b.WriteString(strings.Repeat(string(c), pick(r, []int{1, 1, 2, 2, 3, 4, 5})))
			}
			return []any{b.String()}
		},
		Variants: []kataVariant{
			{
				Fn: "run_length_encode", Args: []string{"text"},
				Summary: "Compress runs of repeated characters.",
				Spec: "Scan `$A` from left to right and replace every maximal run of identical characters by the " +
					"character followed by the length of the run. A run of length 1 is written as the bare character, " +
					"without a count. The empty string encodes to the empty string.",
				Ref:   kataSource("run_length_encode/run_length_encode.py"),
				Wrong: []string{"if n > 1", "if n > 2"},
			},
			{
				Fn: "rle_compress", Args: []string{"s"},
				Summary: "Run-length encode a string.",
				Spec: "Every maximal run of the same character in `$A` becomes the character followed by the run length, " +
					"even when the length is 1 (so `\"aab\"` becomes `\"a2b1\"`). Return `\"\"` for an empty input.",
				Ref:   kataSource("run_length_encode/rle_compress.py"),
				Wrong: []string{"$A[i] + str(j - i)", "str(j - i) + $A[i]"},
			},
			{
				Fn: "encode_runs", Args: []string{"data"},
				Summary: "Encode a string as count/character pairs.",
				Spec: "Split `$A` into maximal runs of one repeated character and write each run as its length followed by " +
					"the character, always including the count: `\"aaab\"` becomes `\"3a1b\"`. The empty string maps to `\"\"`.",
				Ref:   kataSource("run_length_encode/encode_runs.py"),
				Wrong: []string{"str(j - i) + $A[i]", "(str(j - i) if j - i > 1 else \"\") + $A[i]"},
			},
		},
	},
	{
		ID: "run_length_decode", Category: "parsing", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			var b strings.Builder
			for n := rint(r, 1, 5); n > 0; n-- {
				c := string("abcdxyz"[r.IntN(7)])
				k := pick(r, []int{1, 2, 3, 5, 10, 11, 12, 14})
				if v == 0 {
					if k == 1 && chance(r, 0.6) {
						b.WriteString(c)
					} else {
						b.WriteString(c + strconv.Itoa(k))
					}
				} else {
					b.WriteString(strconv.Itoa(k) + c)
				}
			}
			return []any{b.String()}
		},
		Variants: []kataVariant{
			{
				Fn: "decode_runs", Args: []string{"encoded"},
				Summary: "Expand a run-length encoded string.",
				Spec: "`$A` is a sequence of letters, each optionally followed by a decimal count that may have several " +
					"digits. A letter without a count stands for one occurrence. Return the expanded string.",
				Ref:   kataSource("run_length_decode/decode_runs.py"),
				Wrong: []string{"int($A[i:j])", "int($A[j - 1])"},
			},
			{
				Fn: "rle_decode", Args: []string{"s"},
				Summary: "Decode count-prefixed runs.",
				Spec: "`$A` consists of groups made of a positive decimal count (one or more digits) followed by a single " +
					"character, for example `\"12a1b\"`. Return the string where each character is repeated count times.",
				Ref:   kataSource("run_length_decode/rle_decode.py"),
				Wrong: []string{"num += ch", "num = ch"},
			},
		},
	},
	{
		ID: "roman_numerals", Category: "numbers", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			if chance(r, 0.5) {
				return []any{rint(r, 1, 3999)}
			}
			n := 0
			for _, p := range []int{1000, 100, 10, 1} {
				d := pick(r, []int{0, 1, 3, 4, 4, 6, 9, 9})
				if p == 1000 {
					d = r.IntN(4)
				}
				n += d * p
			}
			if n == 0 {
				n = 4
			}
			return []any{n}
		},
		Ref:   kataSource("roman_numerals/family.py"),
		Wrong: []string{`(90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV")`, `(50, "L"), (10, "X"), (5, "V")`},
		Variants: []kataVariant{
			{
				Fn: "int_to_roman", Args: []string{"num"},
				Summary: "Convert an integer to a Roman numeral.",
				Spec: "`$A` is between 1 and 3999. Use the standard symbols I, V, X, L, C, D, M in upper case, with the " +
					"subtractive forms IV, IX, XL, XC, CD and CM.",
			},
			{
				Fn: "to_roman", Args: []string{"n"},
				Summary: "Write a number in lower-case Roman numerals.",
				Spec: "Return the Roman numeral for `$A` (1 <= `$A` <= 3999) using lower-case letters (i, v, x, l, c, d, m) " +
					"and the usual subtractive notation, e.g. 4 is `\"iv\"` and 1994 is `\"mcmxciv\"`.",
				Ref: kataSource("roman_numerals/to_roman.py"),
			},
		},
	},
	{
		ID: "edit_distance", Category: "dynamic_programming", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			a, b := rword(r, "abcde", 0, 8), rword(r, "abcde", 0, 8)
			if chance(r, 0.4) && len(a) > 0 {
				b = a[:r.IntN(len(a))] + rword(r, "abcde", 0, 3)
			}
			if v == 1 {
				a, b = randCase(r, a, 0.4), randCase(r, b, 0.4)
			}
			return []any{a, b}
		},
		Ref:   kataSource("edit_distance/family.py"),
		Wrong: []string{"else 1", "else 2"},
		Variants: []kataVariant{
			{
				Fn: "levenshtein", Args: []string{"a", "b"},
				Summary: "Compute the Levenshtein distance between two strings.",
				Spec: "Return the minimum number of single-character insertions, deletions and substitutions needed to turn " +
					"`$A` into `$B`. Comparison is case-sensitive.",
			},
			{
				Fn: "edit_distance", Args: []string{"source", "target"},
				Summary: "Case-insensitive edit distance.",
				Spec: "Return the minimum number of insertions, deletions and substitutions of one character that transform " +
					"`$A` into `$B`, ignoring letter case (`\"A\"` and `\"a\"` are the same character).",
				Ref: kataSource("edit_distance/edit_distance.py"),
			},
		},
	},
	{
		ID: "coin_change", Category: "dynamic_programming", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			pool := shuffled(r, []int{1, 2, 3, 4, 5, 6, 7, 9, 10, 12})
			k := rint(r, 1, 4)
			coins := make([]any, k)
			for i := range coins {
				coins[i] = pool[i]
			}
			return []any{coins, rint(r, 0, 40)}
		},
		Variants: []kataVariant{
			{
				Fn: "min_coins", Args: []string{"coins", "amount"},
				Summary: "Fewest coins that make up an amount.",
				Spec: "`$A` lists distinct positive coin values, each available in unlimited quantity. Return the minimum " +
					"number of coins whose values add up to exactly `$B`, `0` when `$B` is 0, and `-1` when it cannot be done.",
				Ref:   kataSource("coin_change/min_coins.py"),
				Wrong: []string{"range(1, $B + 1)", "range(1, $B)"},
			},
			{
				Fn: "count_ways", Args: []string{"denominations", "total"},
				Summary: "Count the ways to make change.",
				Spec: "Return how many different combinations of coins from `$A` (unlimited supply of each) add up to " +
					"`$B`. The order of the coins does not matter: 1+2 and 2+1 are the same combination. There is exactly " +
					"one way to make 0.",
				Ref:      kataSource("coin_change/count_ways.py"),
				WrongRef: kataSource("coin_change/count_ways.wrong.py"),
			},
		},
	},
	{
		ID: "longest_increasing_subsequence", Category: "dynamic_programming", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			return []any{rints(r, rint(r, 0, 12), 0, 9)}
		},
		Variants: []kataVariant{
			{
				Fn: "lis_length", Args: []string{"nums"},
				Summary: "Length of the longest strictly increasing subsequence.",
				Spec: "A subsequence keeps the original order but may skip elements. Return the length of the longest " +
					"subsequence of `$A` whose elements are strictly increasing; 0 for an empty list.",
				Ref:   kataSource("longest_increasing_subsequence/lis_length.py"),
				Wrong: []string{"$A[j] < $A[i]", "$A[j] <= $A[i]"},
			},
			{
				Fn: "longest_non_decreasing", Args: []string{"seq"},
				Summary: "Length of the longest non-decreasing subsequence.",
				Spec: "Return the length of the longest subsequence of `$A` (elements in their original order, not " +
					"necessarily adjacent) in which every element is greater than or equal to the previous one. Equal values " +
					"may repeat. Return 0 for an empty list.",
				Ref:   kataSource("longest_increasing_subsequence/longest_non_decreasing.py"),
				Wrong: []string{"$A[j] <= $A[i]", "$A[j] < $A[i]"},
			},
		},
	},
	{
		ID: "merge_intervals", Category: "lists", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			n := rint(r, 0, 7)
			var out []any
			for i := 0; i < n; i++ {
				s := rint(r, 0, 20)
				e := s + rint(r, 0, 5)
				out = append(out, []any{s, e})
				if chance(r, 0.35) {
					t := e + rint(r, 0, 4)
					out = append(out, []any{e, t})
				}
			}
			out = shuffled(r, out)
			if out == nil {
				out = []any{}
			}
			return []any{out}
		},
		Variants: []kataVariant{
			{
				Fn: "merge_intervals", Args: []string{"intervals"},
				Summary: "Merge overlapping intervals.",
				Spec: "`$A` is a list of `[start, end]` pairs with `start <= end`, in any order. Merge every group of " +
					"intervals that overlap or touch (`[1, 3]` and `[3, 5]` merge into `[1, 5]`) and return the merged " +
					"intervals as `[start, end]` lists sorted by start.",
				Ref:   kataSource("merge_intervals/merge_intervals.py"),
				Wrong: []string{"start <= out[-1][1]", "start < out[-1][1]"},
			},
			{
				Fn: "merge_overlapping", Args: []string{"ranges"},
				Summary: "Merge strictly overlapping ranges.",
				Spec: "Each element of `$A` is a closed range `[lo, hi]`. Merge ranges that share more than a single " +
					"endpoint: ranges that merely touch, such as `[1, 3]` and `[3, 5]`, stay separate. Return the result as " +
					"a list of `[lo, hi]` lists sorted by `lo` (then `hi`).",
				Ref:   kataSource("merge_intervals/merge_overlapping.py"),
				Wrong: []string{"start < out[-1][1]", "start <= out[-1][1]"},
			},
		},
	},
	{
		ID: "balanced_brackets", Category: "parsing", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			s := genBrackets(r, rint(r, 0, 6))
			switch k := r.IntN(5); {
			case k <= 1 && len(s) > 0: // one closer of the wrong type
				b := []byte(s)
				var closers []int
				for i, c := range b {
					if c == ')' || c == ']' || c == '}' {
						closers = append(closers, i)
					}
				}
				i := pick(r, closers)
				others := strings.ReplaceAll(")]}", string(b[i]), "")
				b[i] = others[r.IntN(2)]
				s = string(b)
			case k == 2 && len(s) > 0:
				i := r.IntN(len(s))
				s = s[:i] + s[i+1:]
			}
			if v == 1 {
				var b strings.Builder
				for i := 0; i < len(s); i++ {
					if chance(r, 0.5) {
						b.WriteString(pick(r, []string{"x", "f", " ", "1", "+", "ab", "="}))
					}
					b.WriteByte(s[i])
				}
				s = b.String()
			}
			return []any{s}
		},
		Ref:   kataSource("balanced_brackets/family.py"),
		Wrong: []string{"if not stack or stack.pop() != pairs[ch]:", "if not stack or not stack.pop():"},
		Variants: []kataVariant{
			{
				Fn: "is_balanced", Args: []string{"s"},
				Summary: "Check that brackets are balanced.",
				Spec: "`$A` contains only the characters `()[]{}`. Return `True` when every opening bracket is closed by " +
					"a bracket of the same type in the correct order, `False` otherwise. The empty string is balanced.",
			},
			{
				Fn: "brackets_match", Args: []string{"code"},
				Summary: "Validate bracket nesting in a snippet of code.",
				Spec: "Characters of `$A` other than `()[]{}` are ignored. Return `True` if the brackets that remain are " +
					"properly nested and matched by type, and `False` otherwise.",
			},
		},
	},
	{
		ID: "group_anagrams", Category: "dicts", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			var words []string
			for n := rint(r, 1, 3); n > 0; n-- {
				base := rword(r, "aeilnrst", 2, 5)
				for k := rint(r, 1, 3); k > 0; k-- {
					words = append(words, permute(r, base))
				}
				if chance(r, 0.5) && len(base) >= 2 {
					words = append(words, base[:len(base)-1]+base[:1]) // same letters, other multiplicity
				}
			}
			if v == 1 {
				for i := range words {
					words[i] = randCase(r, words[i], 0.3)
				}
			}
			return []any{strsAny(shuffled(r, words))}
		},
		Variants: []kataVariant{
			{
				Fn: "group_anagrams", Args: []string{"words"},
				Summary: "Group words that are anagrams of each other.",
				Spec: "Two words are anagrams when they use exactly the same letters with the same multiplicities. Return " +
					"a list of groups; each group is sorted, and the groups are sorted by their first word (then by the " +
					"following words). Duplicated words stay in their group.",
				Ref:   kataSource("group_anagrams/group_anagrams.py"),
				Wrong: []string{"sorted(w)", "sorted(set(w))"},
			},
			{
				Fn: "anagram_groups", Args: []string{"items"},
				Summary: "Case-insensitive anagram grouping.",
				Spec: "Group the strings of `$A` that are anagrams of each other when letter case is ignored (`\"Tea\"` and " +
					"`\"eat\"` belong together). Keep the words as given. Sort each group with Python's default string order " +
					"and return the groups sorted the same way (compare them as lists).",
				Ref:   kataSource("group_anagrams/anagram_groups.py"),
				Wrong: []string{"sorted(w.lower())", "sorted(set(w.lower()))"},
			},
		},
	},
	{
		ID: "caesar_cipher", Category: "strings", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			var parts []string
			for n := rint(r, 1, 4); n > 0; n-- {
				parts = append(parts, randCase(r, pick(r, vocab), 0.25))
			}
			s := strings.Join(parts, pick(r, []string{" ", ", ", "! ", "-"}))
			if chance(r, 0.3) {
				s += pick(r, []string{"?", ".", " 42", "!"})
			}
			return []any{s, rint(r, -30, 30)}
		},
		Wrong: []string{"% 26", "% 25"},
		Variants: []kataVariant{
			{
				Fn: "caesar_encrypt", Args: []string{"text", "shift"},
				Summary: "Encrypt text with a Caesar cipher.",
				Spec: "Shift every ASCII letter of `$A` forward in the alphabet by `$B` positions, wrapping around from " +
					"`z` to `a`. Upper-case letters stay upper-case; every other character is unchanged. `$B` may be " +
					"negative or larger than 26.",
				Ref: kataSource("caesar_cipher/caesar_encrypt.py"),
			},
			{
				Fn: "caesar_decrypt", Args: []string{"ciphertext", "key"},
				Summary: "Decrypt a Caesar cipher.",
				Spec: "`$A` was produced by shifting each letter forward by `$B` positions (with wrap-around). Undo it: " +
					"shift each ASCII letter back by `$B`, keeping its case, and leave other characters alone. `$B` can be " +
					"any integer.",
				Ref: kataSource("caesar_cipher/caesar_decrypt.py"),
			},
		},
	},
	{
		ID: "camel_to_snake", Category: "strings", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			n := rint(r, 1, 4)
			var b strings.Builder
			for i := 0; i < n; i++ {
				w := pick(r, vocab)
				if v == 1 && chance(r, 0.35) {
					w = pick(r, []string{"HTTP", "URL", "ID", "XML", "API", "JSON"})
				} else if i > 0 || chance(r, 0.4) {
					w = capitalize(w)
				}
				b.WriteString(w)
			}
			return []any{b.String()}
		},
		Variants: []kataVariant{
			{
				Fn: "camel_to_snake", Args: []string{"name"},
				Summary: "Convert camelCase or PascalCase to snake_case.",
				Spec: "Insert an underscore before every upper-case letter of `$A` that is not the first character, then " +
					"lower-case everything: `\"camelCase\"` -> `\"camel_case\"`, `\"PascalCase\"` -> `\"pascal_case\"`.",
				Ref:   kataSource("camel_to_snake/camel_to_snake.py"),
				Wrong: []string{"if i > 0:", "if True:"},
			},
			{
				Fn: "to_snake_case", Args: []string{"identifier"},
				Summary: "Acronym-aware snake_case conversion.",
				Spec: "Convert the identifier `$A` to snake_case. A run of capitals is an acronym and forms one word: " +
					"`\"parseHTTPResponse\"` -> `\"parse_http_response\"`, `\"userID\"` -> `\"user_id\"`, " +
					"`\"XMLParser\"` -> `\"xml_parser\"`. The result is entirely lower-case.",
				Ref:   kataSource("camel_to_snake/to_snake_case.py"),
				Wrong: []string{`s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", $A)`, `s = $A`},
			},
		},
	},
	{
		ID: "parse_config", Category: "parsing", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			keys := shuffled(r, []string{"host", "port", "user", "mode", "level", "path", "retries", "timeout"})
			var items []string
			for i := 0; i < rint(r, 1, 5); i++ {
				k := keys[i]
				if chance(r, 0.15) && i > 0 {
					k = keys[0]
				}
				val := pick(r, []string{"8080", "-3", "0", "debug", "db.local", "/var/lib/app", "a=b", "x y", "12"})
				sep := pick(r, []string{"=", " = ", "= ", " =", "  =  "})
				items = append(items, k+sep+val)
			}
			if v == 0 {
				var lines []string
				for _, it := range items {
					if chance(r, 0.3) {
						lines = append(lines, pick(r, []string{"", "# comment", "  # indented comment", "   "}))
					}
					lines = append(lines, pick(r, []string{"", "  ", "\t"})+it)
				}
				return []any{strings.Join(lines, "\n")}
			}
			var b strings.Builder
			for i, it := range items {
				if i > 0 {
					b.WriteString(pick(r, []string{";", "; ", " ; ", ";;"}))
				}
				b.WriteString(it)
			}
			return []any{b.String()}
		},
		Variants: []kataVariant{
			{
				Fn: "parse_config", Args: []string{"text"},
				Summary: "Parse a simple key = value configuration.",
				Spec: "Each line of `$A` is either blank, a comment (its first non-blank character is `#`), or `key = " +
					"value`. Split on the first `=`, strip surrounding whitespace from key and value, and return a dict " +
					"mapping keys to values (all strings). A key that appears again overrides the earlier value.",
				Ref:   kataSource("parse_config/parse_config.py"),
				Wrong: []string{"value.strip()", "value"},
			},
			{
				Fn: "parse_pairs", Args: []string{"s"},
				Summary: "Parse semicolon-separated key=value pairs.",
				Spec: "`$A` holds items separated by `;`. Each non-empty item is `key=value` (split on the first `=`, " +
					"whitespace around key and value is ignored). Values that are integers (digits with an optional leading " +
					"`-`) become `int`; other values stay strings. Later keys override earlier ones. Return the dict.",
				Ref:   kataSource("parse_config/parse_pairs.py"),
				Wrong: []string{`value.lstrip("-").isdigit()`, `value.isdigit()`},
			},
		},
	},
	{
		ID: "word_frequency", Category: "dicts", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			var words []string
			for n := rint(r, 3, 14); n > 0; n-- {
				w := pick(r, smallVocab[:7])
				if chance(r, 0.3) {
					w = capitalize(w)
				}
				words = append(words, w)
			}
			var b strings.Builder
			for i, w := range words {
				if i > 0 {
					b.WriteString(pick(r, []string{" ", " ", ", ", ". ", "; ", " - "}))
				}
				b.WriteString(w)
			}
			if v == 0 {
				return []any{b.String(), rint(r, 1, 4)}
			}
			return []any{b.String()}
		},
		Variants: []kataVariant{
			{
				Fn: "top_k_words", Args: []string{"text", "k"},
				Summary: "Most frequent words.",
				Spec: "Words are maximal runs of ASCII letters in `$A`, compared case-insensitively (use the lower-case " +
					"form). Return the `$B` most frequent words as `[word, count]` pairs, ordered by count (highest first) " +
					"and then alphabetically. Return fewer pairs if there are fewer distinct words.",
				Ref:   kataSource("word_frequency/top_k_words.py"),
				Wrong: []string{"key=lambda kv: (-kv[1], kv[0])", "key=lambda kv: -kv[1]"},
			},
			{
				Fn: "word_counts", Args: []string{"sentence"},
				Summary: "Count word occurrences.",
				Spec: "Split `$A` into words (maximal runs of ASCII letters), lower-case them and return a dict mapping " +
					"each word to the number of times it occurs.",
				Ref:   kataSource("word_frequency/word_counts.py"),
				Wrong: []string{"$A.lower()", "$A"},
			},
		},
	},
	{
		ID: "spiral_matrix", Category: "matrices", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			if v == 1 {
				return []any{rint(r, 0, 9)}
			}
			if chance(r, 0.06) {
				return []any{[]any{}}
			}
			rows, cols := rint(r, 1, 5), rint(r, 1, 5)
			m := make([]any, rows)
			for i := range m {
				m[i] = rints(r, cols, 1, 99)
			}
			return []any{m}
		},
		Variants: []kataVariant{
			{
				Fn: "spiral_order", Args: []string{"matrix"},
				Summary: "Read a matrix in spiral order.",
				Spec: "`$A` is a rectangular list of rows (possibly empty). Return its elements in clockwise spiral order, " +
					"starting at the top-left corner and moving right first.",
				Ref:   kataSource("spiral_matrix/spiral_order.py"),
				Wrong: []string{"if top < bottom and left < right:", "if top <= bottom and left <= right:"},
			},
			{
				Fn: "spiral_matrix", Args: []string{"n"},
				Summary: "Build an n x n spiral matrix.",
				Spec: "Return an `$A` x `$A` matrix (a list of rows) filled with the numbers 1 to `$A`*`$A` in clockwise " +
					"spiral order, starting at the top-left corner and moving right. For `$A` = 0 return `[]`.",
				Ref:   kataSource("spiral_matrix/spiral_matrix.py"),
				Wrong: []string{"dr, dc = dc, -dr", "dr, dc = -dc, dr"},
			},
		},
	},
	{
		ID: "pascal_row", Category: "numbers", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			return []any{rint(r, 0, 20) + v}
		},
		Variants: []kataVariant{
			{
				Fn: "pascal_row", Args: []string{"n"},
				Summary: "Row of Pascal's triangle (0-indexed).",
				Spec: "Return row `$A` of Pascal's triangle as a list of integers, where row 0 is `[1]` and row 1 is " +
					"`[1, 1]`.",
				Ref:   kataSource("pascal_row/pascal_row.py"),
				Wrong: []string{"range($A)", "range($A - 1)"},
			},
			{
				Fn: "get_row", Args: []string{"row_number"},
				Summary: "Row of Pascal's triangle (1-indexed).",
				Spec: "Rows are numbered from 1: row 1 is `[1]`, row 2 is `[1, 1]`, row 3 is `[1, 2, 1]`. Return row " +
					"`$A` (`$A` >= 1) as a list.",
				Ref:   kataSource("pascal_row/get_row.py"),
				Wrong: []string{"range($A - 1)", "range($A)"},
			},
		},
	},
	{
		ID: "collatz", Category: "numbers", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			if chance(r, 0.1) {
				return []any{rint(r, 1, 4)}
			}
			return []any{rint(r, 1, 10000)}
		},
		Variants: []kataVariant{
			{
				Fn: "collatz_steps", Args: []string{"n"},
				Summary: "Number of Collatz steps to reach 1.",
				Spec: "Starting from the positive integer `$A`, repeatedly replace it by `$A // 2` if it is even and by " +
					"`3 * $A + 1` if it is odd. Return how many replacements are needed to reach 1 (0 when `$A` is 1).",
				Ref:   kataSource("collatz/collatz_steps.py"),
				Wrong: []string{"steps = 0", "steps = 1"},
			},
			{
				Fn: "collatz_length", Args: []string{"start"},
				Summary: "Length of a Collatz sequence.",
				Spec: "Build the Collatz sequence that begins with `$A` (halve even numbers, map odd `x` to `3x + 1`) " +
					"and stops at the first 1. Return the number of terms, counting both `$A` and the final 1; the " +
					"sequence for 1 has length 1.",
				Ref:   kataSource("collatz/collatz_length.py"),
				Wrong: []string{"steps = 1", "steps = 0"},
			},
		},
	},
	{
		ID: "max_subarray", Category: "lists", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			n := rint(r, 1, 10)
			if v == 1 {
				n = rint(r, 0, 10)
			}
			if chance(r, 0.3) {
				return []any{rints(r, n, -20, -1)}
			}
			return []any{rints(r, n, -20, 20)}
		},
		Variants: []kataVariant{
			{
				Fn: "max_subarray_sum", Args: []string{"nums"},
				Summary: "Maximum sum of a non-empty contiguous subarray.",
				Spec: "`$A` is a non-empty list of integers. Return the largest sum of a contiguous, non-empty slice of " +
					"`$A`. If every number is negative the answer is the largest single number.",
				Ref:   kataSource("max_subarray/max_subarray_sum.py"),
				Wrong: []string{"best = cur = $A[0]\n    for x in $A[1:]:", "best = cur = 0\n    for x in $A:"},
			},
			{
				Fn: "best_window_sum", Args: []string{"changes"},
				Summary: "Best total over a contiguous window (empty window allowed).",
				Spec: "Return the maximum sum of a contiguous run of elements of `$A`. The empty run is allowed and sums " +
					"to 0, so the result is never negative; an empty list gives 0.",
				Ref:   kataSource("max_subarray/best_window_sum.py"),
				Wrong: []string{"cur = max(0, cur + x)", "cur = cur + x if cur + x > 0 else x"},
			},
		},
	},
	{
		ID: "two_sum", Category: "lists", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			nums := rints(r, rint(r, 2, 9), -5, 10)
			target := rint(r, -5, 20)
			switch k := r.IntN(10); {
			case k < 5:
				i, j := r.IntN(len(nums)), r.IntN(len(nums))
				target = nums[i].(int) + nums[j].(int)
			case k < 8:
				target = 2 * nums[r.IntN(len(nums))].(int)
			}
			return []any{nums, target}
		},
		Variants: []kataVariant{
			{
				Fn: "two_sum", Args: []string{"nums", "target"},
				Summary: "Indices of two numbers adding up to a target.",
				Spec: "Return `[i, j]` with `i < j` and `$A[i] + $A[j] == $B`. If several pairs exist, choose the one " +
					"with the smallest `j`, and for that `j` the smallest `i`. An element cannot be paired with itself. " +
					"Return `[]` when there is no such pair.",
				Ref:   kataSource("two_sum/two_sum.py"),
				Wrong: []string{"for i in range(j):", "for i in range(j + 1):"},
			},
			{
				Fn: "count_pairs", Args: []string{"values", "total"},
				Summary: "Count index pairs with a given sum.",
				Spec:    "Return the number of index pairs `(i, j)` with `i < j` such that `$A[i] + $A[j] == $B`.",
				Ref:     kataSource("two_sum/count_pairs.py"),
				Wrong:   []string{"for i in range(j):", "for i in range(len($A)):"},
			},
		},
	},
	{
		ID: "longest_palindrome", Category: "strings", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			return []any{rword(r, pick(r, []string{"ab", "abc", "aab"}), 0, 12)}
		},
		Ref:   kataSource("longest_palindrome/family.py"),
		Wrong: []string{"for lo, hi in ((i, i), (i, i + 1)):", "for lo, hi in ((i, i),):"},
		Variants: []kataVariant{
			{
				Fn: "longest_palindromic_substring", Args: []string{"s"},
				Summary: "Longest palindromic substring.",
				Spec: "Return the longest contiguous substring of `$A` that reads the same forwards and backwards. If " +
					"several have the maximum length, return the leftmost one. Return `\"\"` for an empty string.",
			},
			{
				Fn: "longest_palindrome_length", Args: []string{"text"},
				Summary: "Length of the longest palindromic substring.",
				Spec: "Return the length of the longest substring (contiguous) of `$A` that is a palindrome; 0 for an " +
					"empty string.",
				Ref: kataSource("longest_palindrome/longest_palindrome_length.py"),
			},
		},
	},
	{
		ID: "binary_search_bounds", Category: "lists", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			xs := rints(r, rint(r, 0, 10), 0, 15)
			ints := make([]int, len(xs))
			for i, x := range xs {
				ints[i] = x.(int)
			}
			sortInts(ints)
			for i, x := range ints {
				xs[i] = x
			}
			t := rint(r, -1, 16)
			if len(ints) > 0 && chance(r, 0.6) {
				t = ints[r.IntN(len(ints))]
			}
			return []any{xs, t}
		},
		Variants: []kataVariant{
			{
				Fn: "search_insert", Args: []string{"nums", "target"},
				Summary: "Leftmost insertion position in a sorted list.",
				Spec: "`$A` is sorted in non-decreasing order and may contain duplicates. Return the smallest index `i` " +
					"such that inserting `$B` at `i` keeps the list sorted, i.e. the index of the first element that is " +
					"not smaller than `$B` (or `len($A)`). Use binary search.",
				Ref:   kataSource("binary_search_bounds/search_insert.py"),
				Wrong: []string{"if $A[mid] < $B:", "if $A[mid] <= $B:"},
			},
			{
				Fn: "upper_bound", Args: []string{"values", "x"},
				Summary: "Index of the first element greater than x.",
				Spec: "Given the sorted list `$A` (duplicates allowed), return the index of the first element strictly " +
					"greater than `$B`, or `len($A)` if there is none.",
				Ref:   kataSource("binary_search_bounds/upper_bound.py"),
				Wrong: []string{"if $A[mid] <= $B:", "if $A[mid] < $B:"},
			},
		},
	},
	{
		ID: "flatten", Category: "lists", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			nested := genNested(r, 4)
			if v == 1 {
				return []any{nested, rint(r, 0, 3)}
			}
			return []any{nested}
		},
		Variants: []kataVariant{
			{
				Fn: "flatten", Args: []string{"nested"},
				Summary: "Flatten an arbitrarily nested list.",
				Spec: "`$A` is a list whose elements are integers or (recursively) lists. Return a flat list of all the " +
					"integers in left-to-right order.",
				Ref:   kataSource("flatten/flatten.py"),
				Wrong: []string{"out.extend($FN(item))", "out.extend(item)"},
			},
			{
				Fn: "flatten_depth", Args: []string{"items", "depth"},
				Summary: "Flatten a nested list up to a given depth.",
				Spec: "Remove at most `$B` levels of nesting from `$A`: with `$B` = 0 the result equals `$A`, with " +
					"`$B` = 1 the elements of directly nested lists are spliced in, and so on. Deeper lists stay lists.",
				Ref:   kataSource("flatten/flatten_depth.py"),
				Wrong: []string{"$B > 0", "$B >= 0"},
			},
		},
	},
	{
		ID: "rotate_matrix", Category: "matrices", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			rows, cols := rint(r, 1, 4), rint(r, 1, 4)
			if chance(r, 0.5) {
				cols = rows
			}
			m := make([]any, rows)
			for i := range m {
				m[i] = rints(r, cols, 1, 9)
			}
			return []any{m}
		},
		Variants: []kataVariant{
			{
				Fn: "rotate_clockwise", Args: []string{"matrix"},
				Summary: "Rotate a matrix 90 degrees clockwise.",
				Spec: "`$A` is a non-empty rectangular list of rows. Return a new matrix that is `$A` rotated a quarter " +
					"turn clockwise (an `r x c` matrix becomes `c x r`); do not modify the input.",
				Ref:   kataSource("rotate_matrix/rotate_clockwise.py"),
				Wrong: []string{"zip(*$A[::-1])", "zip(*$A)"},
			},
			{
				Fn: "rotate_counterclockwise", Args: []string{"grid"},
				Summary: "Rotate a grid 90 degrees counter-clockwise.",
				Spec: "Return `$A` rotated a quarter turn counter-clockwise, as a new list of rows. The first row of the " +
					"result is the last column of `$A`, read top to bottom.",
				Ref:   kataSource("rotate_matrix/rotate_counterclockwise.py"),
				Wrong: []string{"[::-1]", ""},
			},
		},
	},
	{
		ID: "prime_factors", Category: "numbers", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			if chance(r, 0.5) {
				return []any{rint(r, 2, 100000)}
			}
			n := 1
			for k := rint(r, 1, 4); k > 0; k-- {
				n *= pick(r, []int{2, 2, 3, 3, 5, 7, 11, 13})
			}
			if chance(r, 0.5) {
				n *= pick(r, []int{97, 101, 211, 1009})
			}
			return []any{n}
		},
		Variants: []kataVariant{
			{
				Fn: "prime_factors", Args: []string{"n"},
				Summary: "Prime factorisation with multiplicity.",
				Spec: "Return the prime factors of the integer `$A` >= 2 in non-decreasing order, each repeated as often " +
					"as it divides `$A` (so the product of the list is `$A`).",
				Ref:   kataSource("prime_factors/prime_factors.py"),
				Wrong: []string{"while $A % p == 0:", "if $A % p == 0:"},
			},
			{
				Fn: "distinct_prime_factors", Args: []string{"number"},
				Summary: "Distinct prime divisors.",
				Spec:    "Return the sorted list of distinct primes that divide `$A` (`$A` >= 2), each listed once.",
				Ref:     kataSource("prime_factors/distinct_prime_factors.py"),
				Wrong:   []string{"    if $A > 1:\n        out.append($A)\n", ""},
			},
		},
	},
	{
		ID: "gcd_lcm", Category: "numbers", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			n := rint(r, 0, 5)
			base := pick(r, []int{1, 2, 3, 4, 6, 10})
			xs := make([]any, n)
			for i := range xs {
				xs[i] = base * rint(r, 1, 12)
			}
			return []any{xs}
		},
		Variants: []kataVariant{
			{
				Fn: "lcm_of_list", Args: []string{"nums"},
				Summary: "Least common multiple of a list.",
				Spec:    "Return the least common multiple of the positive integers in `$A`. The LCM of an empty list is 1.",
				Ref:     kataSource("gcd_lcm/lcm_of_list.py"),
				Wrong:   []string{"result * x // gcd(result, x)", "result * x"},
			},
			{
				Fn: "gcd_of_list", Args: []string{"values"},
				Summary: "Greatest common divisor of a list.",
				Spec:    "Return the greatest common divisor of the positive integers in `$A`; return 0 for an empty list.",
				Ref:     kataSource("gcd_lcm/gcd_of_list.py"),
				Wrong:   []string{"result = 0\n", "result = 1\n"},
			},
		},
	},
	{
		ID: "digit_sum", Category: "numbers", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			n := rint(r, 0, 1000000)
			if v == 0 && chance(r, 0.4) {
				n = -n
			}
			return []any{n}
		},
		Variants: []kataVariant{
			{
				Fn: "digit_sum", Args: []string{"n"},
				Summary: "Signed sum of decimal digits.",
				Spec: "Return the sum of the decimal digits of `$A`. For a negative `$A` the result is negative: " +
					"`-123` gives `-6`.",
				Ref:   kataSource("digit_sum/digit_sum.py"),
				Wrong: []string{"return -total if $A < 0 else total", "return total"},
			},
			{
				Fn: "digital_root", Args: []string{"n"},
				Summary: "Digital root of a non-negative integer.",
				Spec: "Repeatedly replace `$A` by the sum of its decimal digits until a single digit remains, and return " +
					"that digit.",
				Ref:   kataSource("digit_sum/digital_root.py"),
				Wrong: []string{"while $A >= 10:", "if $A >= 10:"},
			},
		},
	},
	{
		ID: "first_unique_char", Category: "strings", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			s := rword(r, "abcd", 0, 10)
			if v == 1 {
				s = randCase(r, s, 0.4)
			}
			return []any{s}
		},
		Variants: []kataVariant{
			{
				Fn: "first_unique_index", Args: []string{"s"},
				Summary: "Index of the first non-repeating character.",
				Spec: "Return the index of the first character of `$A` that occurs exactly once in the whole string, or " +
					"-1 if every character repeats.",
				Ref:      kataSource("first_unique_char/first_unique_index.py"),
				WrongRef: kataSource("first_unique_char/first_unique_index.wrong.py"),
			},
			{
				Fn: "first_unique_letter", Args: []string{"text"},
				Summary: "First letter that does not repeat, ignoring case.",
				Spec: "Find the first character of `$A` whose letter occurs only once when upper and lower case are " +
					"considered equal, and return it as it appears in `$A`. Return `\"\"` if there is none.",
				Ref:   kataSource("first_unique_char/first_unique_letter.py"),
				Wrong: []string{".lower()", ""},
			},
		},
	},
	{
		ID: "valid_ipv4", Category: "parsing", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			parts := []string{}
			for i := 0; i < 4; i++ {
				parts = append(parts, strconv.Itoa(rint(r, 0, 255)))
			}
			switch r.IntN(8) {
			case 0:
				parts[r.IntN(4)] = pick(r, []string{"01", "00", "007", "010"})
			case 1:
				parts[r.IntN(4)] = strconv.Itoa(rint(r, 256, 999))
			case 2:
				parts = append(parts, strconv.Itoa(rint(r, 0, 255)))
			case 3:
				parts = parts[:3]
			case 4:
				parts[r.IntN(4)] = pick(r, []string{"a1", "", "1e2", "-1", " 1"})
			case 5:
				parts[r.IntN(4)] = pick(r, []string{"0255", "0001"})
			}
			return []any{strings.Join(parts, ".")}
		},
		Variants: []kataVariant{
			{
				Fn: "is_valid_ipv4", Args: []string{"address"},
				Summary: "Validate a dotted-quad IPv4 address.",
				Spec: "Return `True` if `$A` consists of exactly four parts separated by dots, each part is made only of " +
					"decimal digits, its value is between 0 and 255, and it has no leading zero (`\"0\"` itself is fine, " +
					"`\"01\"` is not). Otherwise return `False`.",
				Ref:   kataSource("valid_ipv4/is_valid_ipv4.py"),
				Wrong: []string{`if len(p) > 1 and p[0] == "0":`, `if len(p) > 3:`},
			},
			{
				Fn: "valid_ip", Args: []string{"s"},
				Summary: "Lenient IPv4 check (leading zeros allowed).",
				Spec: "`$A` is a valid address when it has exactly four dot-separated parts, each one to three decimal " +
					"digits with a value of at most 255. Leading zeros are allowed (`\"010\"` is 10). Return a bool.",
				Ref:   kataSource("valid_ipv4/valid_ip.py"),
				Wrong: []string{"if len(parts) != 4:", "if len(parts) < 4:"},
			},
		},
	},
	{
		ID: "longest_common_prefix", Category: "strings", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			if chance(r, 0.05) {
				return []any{[]any{}}
			}
			prefix := rword(r, "abc", 0, 4)
			n := rint(r, 1, 5)
			words := make([]string, n)
			for i := range words {
				words[i] = prefix + rword(r, "abcd", 0, 4)
			}
			if n >= 3 && chance(r, 0.6) {
				words[1] = prefix[:len(prefix)/2] + "z" + rword(r, "ab", 0, 2)
			}
			if v == 1 {
				for i := range words {
					words[i] = randCase(r, words[i], 0.4)
				}
			}
			return []any{strsAny(words)}
		},
		Variants: []kataVariant{
			{
				Fn: "longest_common_prefix", Args: []string{"words"},
				Summary: "Longest common prefix of a list of strings.",
				Spec: "Return the longest string that is a prefix of every string in `$A`. Return `\"\"` when `$A` is " +
					"empty or the strings share no prefix.",
				Ref:      kataSource("longest_common_prefix/longest_common_prefix.py"),
				WrongRef: kataSource("longest_common_prefix/longest_common_prefix.wrong.py"),
			},
			{
				Fn: "common_prefix_ci", Args: []string{"strings"},
				Summary: "Case-insensitive common prefix.",
				Spec: "Lower-case every string of `$A` and return their longest common prefix (in lower case). An empty " +
					"list gives `\"\"`.",
				Ref:      kataSource("longest_common_prefix/common_prefix_ci.py"),
				WrongRef: kataSource("longest_common_prefix/common_prefix_ci.wrong.py"),
			},
		},
	},
	{
		ID: "parse_duration", Category: "parsing", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			units := []string{"h", "m", "s"}
			if v == 1 {
				units = []string{"d", "h", "m", "s"}
			}
			var parts []string
			for _, u := range units {
				if chance(r, 0.6) {
					parts = append(parts, strconv.Itoa(pick(r, []int{0, 1, 2, 5, 12, 30, 45, 90, 100}))+u)
				}
			}
			if len(parts) == 0 {
				parts = append(parts, strconv.Itoa(rint(r, 10, 99))+units[len(units)-1])
			}
			sep := ""
			if v == 1 {
				sep = pick(r, []string{" ", " ", ""})
			}
			return []any{strings.Join(parts, sep)}
		},
		Variants: []kataVariant{
			{
				Fn: "parse_duration", Args: []string{"text"},
				Summary: "Convert a duration like \"1h30m15s\" to seconds.",
				Spec: "`$A` is a concatenation of `<number><unit>` parts with units `h` (hours), `m` (minutes) and `s` " +
					"(seconds), each present at most once, in that order. Numbers may have several digits. Return the total " +
					"number of seconds as an int.",
				Ref:   kataSource("parse_duration/parse_duration.py"),
				Wrong: []string{`(\d+)`, `(\d)`},
			},
			{
				Fn: "to_seconds", Args: []string{"duration"},
				Summary: "Duration string with days to seconds.",
				Spec: "`$A` contains parts such as `2d`, `3h`, `15m`, `40s` (days, hours, minutes, seconds), optionally " +
					"separated by spaces. Return the total in seconds.",
				Ref:   kataSource("parse_duration/to_seconds.py"),
				Wrong: []string{`(\d+)`, `(\d)`},
			},
		},
	},
	{
		ID: "knapsack", Category: "dynamic_programming", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			n := rint(r, 1, 5)
			return []any{rints(r, n, 1, 8), rints(r, n, 1, 20), rint(r, 0, 20)}
		},
		Variants: []kataVariant{
			{
				Fn: "knapsack", Args: []string{"weights", "values", "capacity"},
				Summary: "0/1 knapsack.",
				Spec: "Item `i` has weight `$A[i]` and value `$B[i]`. Each item can be taken at most once. Return the " +
					"maximum total value of items whose total weight does not exceed `$C`.",
				Ref:   kataSource("knapsack/knapsack.py"),
				Wrong: []string{"range($C, w - 1, -1)", "range(w, $C + 1)"},
			},
			{
				Fn: "unbounded_knapsack", Args: []string{"item_weights", "item_values", "limit"},
				Summary: "Knapsack with unlimited copies.",
				Spec: "Every item may be used any number of times. With weights `$A`, values `$B` and weight limit `$C`, " +
					"return the largest achievable total value.",
				Ref:   kataSource("knapsack/unbounded_knapsack.py"),
				Wrong: []string{"range(w, $C + 1)", "range($C, w - 1, -1)"},
			},
		},
	},
	{
		ID: "longest_common_subsequence", Category: "dynamic_programming", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			a, b := rword(r, "abcd", 0, 9), rword(r, "abcd", 0, 9)
			if v == 1 {
				a, b = randCase(r, a, 0.4), randCase(r, b, 0.4)
			}
			return []any{a, b}
		},
		Wrong: []string{"max(dp[i - 1][j], dp[i][j - 1])", "dp[i - 1][j - 1]"},
		Variants: []kataVariant{
			{
				Fn: "lcs_length", Args: []string{"a", "b"},
				Summary: "Length of the longest common subsequence.",
				Spec: "Return the length of the longest sequence of characters that appears, in order but not " +
					"necessarily contiguously, in both `$A` and `$B`.",
				Ref: kataSource("longest_common_subsequence/lcs_length.py"),
			},
			{
				Fn: "common_subsequence_length", Args: []string{"first", "second"},
				Summary: "Case-insensitive LCS length.",
				Spec: "Like the classic longest common subsequence, but letters match regardless of case. Return the " +
					"length for `$A` and `$B`.",
				Ref: kataSource("longest_common_subsequence/common_subsequence_length.py"),
			},
		},
	},
	{
		ID: "climb_stairs", Category: "dynamic_programming", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			if v == 1 {
				steps := shuffled(r, []int{1, 2, 3, 4, 5})[:rint(r, 1, 3)]
				return []any{rint(r, 0, 15), intsAny(steps)}
			}
			return []any{rint(r, 0, 30)}
		},
		Variants: []kataVariant{
			{
				Fn: "climb_stairs", Args: []string{"n"},
				Summary: "Ways to climb a staircase with 1- and 2-steps.",
				Spec: "You climb `$A` stairs taking 1 or 2 steps at a time. Return the number of distinct ordered ways to " +
					"reach the top. There is one way to climb 0 stairs.",
				Ref:   kataSource("climb_stairs/climb_stairs.py"),
				Wrong: []string{"a, b = 1, 1", "a, b = 1, 2"},
			},
			{
				Fn: "count_step_sequences", Args: []string{"n", "steps"},
				Summary: "Ordered step sequences reaching n.",
				Spec: "Each move climbs a number of stairs taken from `$B`. Return how many ordered sequences of moves " +
					"climb exactly `$A` stairs (different orders count separately; 0 stairs can be climbed in one way).",
				Ref:      kataSource("climb_stairs/count_step_sequences.py"),
				WrongRef: kataSource("climb_stairs/count_step_sequences.wrong.py"),
			},
		},
	},
	{
		ID: "title_case", Category: "strings", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			words := []string{}
			if v == 1 && chance(r, 0.5) {
				words = append(words, pick(r, []string{"the", "a", "of"}))
			}
			for n := rint(r, 1, 5); n > 0; n-- {
				w := pick(r, vocab)
				switch r.IntN(6) {
				case 0:
					w = pick(r, []string{"don't", "it's", "3rd", "o'neil", "x-ray"})
				case 1:
					w = pick(r, []string{"the", "of", "and", "in", "a", "to"})
				case 2:
					w = strings.ToUpper(w)
				}
				words = append(words, w)
			}
			return []any{strings.Join(words, " ")}
		},
		Variants: []kataVariant{
			{
				Fn: "capitalize_words", Args: []string{"sentence"},
				Summary: "Capitalise every word.",
				Spec: "Words in `$A` are separated by single spaces. Return the sentence with the first character of " +
					"every word upper-cased and the rest of the word lower-cased (`\"don't\"` becomes `\"Don't\"`, " +
					"`\"3rd\"` stays `\"3rd\"`).",
				Ref:      kataSource("title_case/capitalize_words.py"),
				WrongRef: kataSource("title_case/capitalize_words.wrong.py"),
			},
			{
				Fn: "headline", Args: []string{"title"},
				Summary: "Headline-style capitalisation.",
				Spec: "Capitalise each space-separated word of `$A` (first character upper-case, the rest lower-case), " +
					"except the small words a, an, and, the, of, in, on and to, which are written in lower case unless they " +
					"are the first word.",
				Ref:   kataSource("title_case/headline.py"),
				Wrong: []string{"if i > 0 and w.lower() in small:", "if w.lower() in small:"},
			},
		},
	},
	{
		ID: "rotate_list", Category: "lists", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			return []any{rints(r, rint(r, 0, 7), 0, 50), rint(r, 0, 25)}
		},
		Variants: []kataVariant{
			{
				Fn: "rotate_right", Args: []string{"items", "k"},
				Summary: "Rotate a list to the right.",
				Spec: "Return a new list with the elements of `$A` rotated `$B` positions to the right (the last element " +
					"moves to the front on each step). `$B` can be larger than the length; an empty list stays empty.",
				Ref:   kataSource("rotate_list/rotate_right.py"),
				Wrong: []string{"k = $B % len($A)", "k = $B"},
			},
			{
				Fn: "rotate_left", Args: []string{"values", "steps"},
				Summary: "Rotate a list to the left.",
				Spec: "Move the first element of `$A` to the end, `$B` times, and return the result as a new list. " +
					"`$B` may exceed `len($A)`.",
				Ref:   kataSource("rotate_list/rotate_left.py"),
				Wrong: []string{"k = $B % len($A)", "k = $B"},
			},
		},
	},
	{
		ID: "chunk_list", Category: "lists", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			return []any{rints(r, rint(r, 0, 11), 0, 9), rint(r, 1, 4)}
		},
		Variants: []kataVariant{
			{
				Fn: "chunk", Args: []string{"items", "size"},
				Summary: "Split a list into chunks.",
				Spec: "Split `$A` into consecutive chunks of `$B` elements (`$B` >= 1). The last chunk may be shorter. " +
					"Return the list of chunks.",
				Ref:   kataSource("chunk_list/chunk.py"),
				Wrong: []string{"range(0, len($A), $B)", "range(0, len($A) - $B + 1, $B)"},
			},
			{
				Fn: "full_chunks", Args: []string{"values", "n"},
				Summary: "Split a list into full chunks only.",
				Spec: "Cut `$A` into consecutive groups of exactly `$B` elements and return them as a list of lists; " +
					"trailing elements that do not fill a whole group are dropped.",
				Ref:   kataSource("chunk_list/full_chunks.py"),
				Wrong: []string{"range(0, len($A) - $B + 1, $B)", "range(0, len($A), $B)"},
			},
		},
	},
	{
		ID: "dedupe", Category: "lists", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			n := rint(r, 0, 10)
			if v == 1 {
				ws := make([]string, n)
				for i := range ws {
					ws[i] = randCase(r, pick(r, smallVocab[:6]), 0.4)
				}
				return []any{strsAny(ws)}
			}
			return []any{rints(r, n, 0, 6)}
		},
		Variants: []kataVariant{
			{
				Fn: "unique_in_order", Args: []string{"items"},
				Summary: "Remove duplicates, keeping first occurrences.",
				Spec: "Return the elements of `$A` without duplicates, keeping the first occurrence of each value and " +
					"the original order.",
				Ref:   kataSource("dedupe/unique_in_order.py"),
				Wrong: []string{"    return out\n", "    return sorted(out)\n"},
			},
			{
				Fn: "dedupe_words", Args: []string{"words"},
				Summary: "Case-insensitive de-duplication.",
				Spec: "Remove words from `$A` that repeat an earlier word when case is ignored; keep the first spelling " +
					"and the original order.",
				Ref:   kataSource("dedupe/dedupe_words.py"),
				Wrong: []string{"x.lower()", "x"},
			},
		},
	},
	{
		ID: "char_frequency", Category: "dicts", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			s := rword(r, "aabbcde xyz!", 0, 14)
			if v == 0 {
				s = randCase(r, s, 0.4)
			}
			return []any{s}
		},
		Variants: []kataVariant{
			{
				Fn: "letter_counts", Args: []string{"text"},
				Summary: "Count letters, ignoring case.",
				Spec: "Return a dict mapping each letter that occurs in `$A` (lower-cased) to its number of occurrences. " +
					"Non-letters are ignored; `\"A\"` and `\"a\"` count as the same letter.",
				Ref:   kataSource("char_frequency/letter_counts.py"),
				Wrong: []string{"$A.lower()", "$A"},
			},
			{
				Fn: "most_common_char", Args: []string{"s"},
				Summary: "Most frequent character.",
				Spec: "Return the character that occurs most often in `$A` (spaces and punctuation count too). Break ties " +
					"by returning the smallest such character in Python string order. Return `\"\"` for an empty string.",
				Ref:   kataSource("char_frequency/most_common_char.py"),
				Wrong: []string{"min(counts, key=lambda ch: (-counts[ch], ch))", "max(counts, key=lambda ch: counts[ch])"},
			},
		},
	},
	{
		ID: "base_convert", Category: "numbers", Difficulty: "easy",
		Gen: func(r *rand.Rand, v int) []any {
			n := rint(r, 0, 100000)
			if chance(r, 0.2) {
				n = -n
			}
			base := pick(r, []int{2, 3, 7, 8, 16, 36})
			if v == 1 {
				return []any{strconv.FormatInt(int64(n), base), base}
			}
			return []any{n, base}
		},
		Variants: []kataVariant{
			{
				Fn: "to_base", Args: []string{"n", "base"},
				Summary: "Write an integer in another base.",
				Spec: "Return the representation of `$A` in base `$B` (2 <= `$B` <= 36) using the digits `0-9` then " +
					"`a-z`. Negative numbers get a leading `-`; zero is `\"0\"`.",
				Ref:   kataSource("base_convert/to_base.py"),
				Wrong: []string{`"".join(reversed(out))`, `"".join(out)`},
			},
			{
				Fn: "from_base", Args: []string{"text", "base"},
				Summary: "Parse an integer written in another base.",
				Spec: "`$A` is an integer written in base `$B` (2..36) with digits `0-9a-z` and an optional leading `-`. " +
					"Return its value as an int, without calling `int($A, $B)`.",
				Ref:   kataSource("base_convert/from_base.py"),
				Wrong: []string{"value * $B", "value * 10"},
			},
		},
	},
	{
		ID: "count_islands", Category: "matrices", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			rows, cols := rint(r, 1, 6), rint(r, 1, 6)
			p := 0.3 + 0.3*r.Float64()
			g := make([]any, rows)
			for i := range g {
				row := make([]any, cols)
				for j := range row {
					if chance(r, p) {
						row[j] = 1
					} else {
						row[j] = 0
					}
				}
				g[i] = row
			}
			return []any{g}
		},
		Ref: kataSource("count_islands/family.py"),
		Variants: []kataVariant{
			{
				Fn: "count_islands", Args: []string{"grid"},
				Summary: "Count islands in a 0/1 grid (4-connectivity).",
				Spec: "`$A` is a list of rows of 0s and 1s. An island is a maximal group of 1-cells connected " +
					"horizontally or vertically (not diagonally). Return the number of islands.",
			},
			{
				Fn: "count_regions", Args: []string{"cells"},
				Summary: "Count 8-connected regions of ones.",
				Spec: "Cells of `$A` equal to 1 belong to the same region when they touch horizontally, vertically or " +
					"diagonally. Return the number of regions.",
			},
		},
	},
	{
		ID: "eval_rpn", Category: "parsing", Difficulty: "medium",
		Gen: func(r *rand.Rand, v int) []any {
			toks := genRPN(r, rint(r, 1, 3))
			if v == 1 {
				return []any{strings.Join(toks, " ")}
			}
			return []any{strsAny(toks)}
		},
		Variants: []kataVariant{
			{
				Fn: "eval_rpn", Args: []string{"tokens"},
				Summary: "Evaluate a Reverse Polish Notation expression.",
				Spec: "`$A` is a list of tokens: integers (possibly negative, as strings) and the operators `+`, `-`, " +
					"`*`, `/`. Evaluate the expression with a stack. Division is integer division that truncates toward " +
					"zero (`-7 / 2` is `-3`). The expression is valid and never divides by zero.",
				Ref:   kataSource("eval_rpn/eval_rpn.py"),
				Wrong: []string{"q = abs(a) // abs(b)\n                stack.append(q if (a >= 0) == (b > 0) else -q)", "stack.append(a // b)"},
			},
			{
				Fn: "evaluate_postfix", Args: []string{"expression"},
				Summary: "Evaluate a postfix expression string.",
				Spec: "`$A` is a space-separated postfix expression over integers with `+`, `-`, `*` and `/`. Division " +
					"truncates toward zero. Return the integer result.",
				Ref:   kataSource("eval_rpn/evaluate_postfix.py"),
				Wrong: []string{"q = abs(a) // abs(b)\n                stack.append(q if (a >= 0) == (b > 0) else -q)", "stack.append(a // b)"},
			},
		},
	},
}

func init() {
	// count_islands shares one reference whose neighbourhood differs.
	for _, f := range kataFamilies {
		if f.ID != "count_islands" {
			continue
		}
		four := "[(1, 0), (-1, 0), (0, 1), (0, -1)]"
		eight := "[(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)]"
		f.Variants[0].Ref = strings.Replace(f.Ref, "MOVES", four, 1)
		f.Variants[0].Wrong = []string{four, eight}
		f.Variants[1].Ref = strings.Replace(f.Ref, "MOVES", eight, 1)
		f.Variants[1].Wrong = []string{eight, four}
	}
}

func intsAny(xs []int) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func sortInts(xs []int) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// genBrackets returns a balanced bracket string with n pairs.
func genBrackets(r *rand.Rand, n int) string {
	if n == 0 {
		return ""
	}
	open, close := "([{", ")]}"
	k := r.IntN(3)
	inner := r.IntN(n)
	return string(open[k]) + genBrackets(r, inner) + string(close[k]) + genBrackets(r, n-1-inner)
}

func genNested(r *rand.Rand, depth int) []any {
	out := []any{}
	for n := rint(r, 0, 4); n > 0; n-- {
		if depth > 0 && chance(r, 0.35) {
			out = append(out, genNested(r, depth-1))
		} else {
			out = append(out, rint(r, 0, 20))
		}
	}
	return out
}

// genRPN returns the tokens of a random expression tree of the given depth.
// The right operand of a division is always a non-zero literal.
func genRPN(r *rand.Rand, depth int) []string {
	if depth == 0 || chance(r, 0.25) {
		return []string{strconv.Itoa(rint(r, -9, 12))}
	}
	op := pick(r, []string{"+", "-", "*", "/", "/"})
	left := genRPN(r, depth-1)
	var right []string
	if op == "/" {
		d := rint(r, -5, 5)
		if d == 0 {
			d = 3
		}
		right = []string{strconv.Itoa(d)}
	} else {
		right = genRPN(r, depth-1)
	}
	return append(append(left, right...), op)
}
