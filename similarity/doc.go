// Package similarity holds the text similarity measures of the near_dup
// and decontam stages: a normaliser that makes re-wrapped lines and
// changed numbers compare equal, word shingles, one-permutation MinHash
// signatures with LSH banding, exact Jaccard on sorted shingle sets, and
// an Indel (LCS) ratio on word sequences.
//
// MinHash is written here rather than imported: no maintained Go MinHash
// module is in the project's package list, and the part needed (one
// permutation hashing with densification, banding) is about a hundred
// lines.
package similarity
