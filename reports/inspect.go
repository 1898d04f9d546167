package reports

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/parquet-go/parquet-go"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
)

// Column describes one parquet column.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Optional bool   `json:"optional"`
	Encoding string `json:"encoding,omitempty"`
	Codec    string `json:"compression,omitempty"`
}

// SizeStats summarises blob sizes in bytes.
type SizeStats struct {
	Min    int64 `json:"min"`
	Median int64 `json:"median"`
	P90    int64 `json:"p90"`
	Max    int64 `json:"max"`
	Total  int64 `json:"total"`
}

// Inspection is the result of `otcurate inspect`.
type Inspection struct {
	Pool               string            `json:"pool"`
	Files              []string          `json:"files"`
	FileBytes          int64             `json:"file_bytes"`
	Rows               int64             `json:"rows"`
	RowGroups          int               `json:"row_groups"`
	MaxRowsPerGroup    int64             `json:"max_rows_per_group"`
	CreatedBy          string            `json:"created_by"`
	Columns            []Column          `json:"columns"`
	BlobBytes          SizeStats         `json:"blob_bytes"`
	Valid              int64             `json:"valid"`
	Invalid            int64             `json:"invalid"`
	InvalidByReason    map[string]int64  `json:"invalid_by_reason"`
	Duplicates         int64             `json:"duplicates"`
	UniqueEnvironments int               `json:"unique_environments"`
	Examples           map[string]string `json:"examples"` // one offending path per reason
}

// Inspect describes a dataset: parquet layout, blob sizes, and the
// validity of every row (the validate and dedup stages, in memory).
func Inspect(ctx context.Context, spec string, lim bundle.Limits, workers int) (*Inspection, error) {
	src, err := pool.Open(spec)
	if err != nil {
		return nil, err
	}
	ins := &Inspection{Pool: spec, InvalidByReason: map[string]int64{}, Examples: map[string]string{}, Files: []string{}}
	if ps, ok := src.(*pool.ParquetSource); ok {
		for _, name := range ps.Files() {
			if err := ins.addLayout(name); err != nil {
				return nil, err
			}
		}
	}
	stages, err := filters.Build([]string{filters.StageValidate, filters.StageDedup}, filters.Options{Limits: lim})
	if err != nil {
		return nil, err
	}
	_, res, err := pipeline.Build(ctx, pipeline.BuildOptions{Source: src, Stages: stages, Limits: lim, Workers: workers,
		OnDecision: func(d pipeline.Decision) {
			if d.Verdict == pipeline.Keep {
				return
			}
			if d.Stage == filters.StageDedup {
				ins.Duplicates++
			} else {
				ins.Invalid++
				ins.InvalidByReason[d.Reason]++
			}
			if _, ok := ins.Examples[d.Reason]; !ok {
				ins.Examples[d.Reason] = fmt.Sprintf("%s: %s", d.Path, d.Detail)
			}
		}})
	if err != nil {
		return nil, err
	}
	ins.Rows = int64(len(res.Tasks))
	ins.Valid = ins.Rows - ins.Invalid
	envs := map[string]bool{}
	sizes := make([]int64, 0, len(res.Tasks))
	for _, t := range res.Tasks {
		sizes = append(sizes, t.BlobBytes)
		if t.EnvHash != "" && t.Alive {
			envs[t.EnvHash] = true
		}
	}
	ins.UniqueEnvironments = len(envs)
	ins.BlobBytes = sizeStats(sizes)
	return ins, nil
}

func (ins *Inspection) addLayout(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	ins.Files = append(ins.Files, name)
	ins.FileBytes += st.Size()
	ins.RowGroups += len(pf.RowGroups())
	for _, rg := range pf.RowGroups() {
		ins.MaxRowsPerGroup = max(ins.MaxRowsPerGroup, rg.NumRows())
	}
	md := pf.Metadata()
	ins.CreatedBy = md.CreatedBy
	if ins.Columns == nil {
		for _, leaf := range pf.Schema().Fields() {
			c := Column{Name: leaf.Name(), Type: leaf.Type().String(), Optional: leaf.Optional()}
			ins.Columns = append(ins.Columns, c)
		}
		if len(md.RowGroups) > 0 {
			for i, cc := range md.RowGroups[0].Columns {
				if i < len(ins.Columns) {
					ins.Columns[i].Codec = cc.MetaData.Codec.String()
					if len(cc.MetaData.Encoding) > 0 {
						ins.Columns[i].Encoding = fmt.Sprint(cc.MetaData.Encoding)
					}
				}
			}
		}
	}
	return nil
}

func sizeStats(s []int64) SizeStats {
	if len(s) == 0 {
		return SizeStats{}
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var total int64
	for _, v := range s {
		total += v
	}
	return SizeStats{Min: s[0], Median: s[len(s)/2], P90: s[len(s)*9/10], Max: s[len(s)-1], Total: total}
}
