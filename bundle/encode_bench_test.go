package bundle

import (
	"bytes"
	"testing"
)

func BenchmarkEncodeSmallTask(b *testing.B) {
	entries := []Entry{
		{Name: "instruction.md", Kind: KindFile, Mode: 0o644, Data: bytes.Repeat([]byte("Implement the function. "), 40)},
		{Name: "task.toml", Kind: KindFile, Mode: 0o644, Data: []byte("schema_version = \"1.1\"\n")},
		{Name: "environment/Dockerfile", Kind: KindFile, Mode: 0o644, Data: []byte("FROM python:3.11-slim\nRUN pip install pytest\n")},
		{Name: "tests/test.sh", Kind: KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")},
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := Encode(&buf, entries); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanSmallTask(b *testing.B) {
	var buf bytes.Buffer
	Encode(&buf, []Entry{
		{Name: "instruction.md", Kind: KindFile, Mode: 0o644, Data: bytes.Repeat([]byte("Implement the function. "), 40)},
		{Name: "task.toml", Kind: KindFile, Mode: 0o644, Data: []byte("schema_version = \"1.1\"\n")},
		{Name: "environment/Dockerfile", Kind: KindFile, Mode: 0o644, Data: []byte("FROM python:3.11-slim\nRUN pip install pytest\n")},
		{Name: "tests/test.sh", Kind: KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")},
	})
	blob := buf.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(blob)))
	for i := 0; i < b.N; i++ {
		bb, err := Scan(blob, Limits{}, DefaultRetain())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Validate(bb); err != nil {
			b.Fatal(err)
		}
	}
}
