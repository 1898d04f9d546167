package filters

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/otcurate/otcurate/pipeline"
)

// StageNearDupShards is the stage `otcurate merge` runs when the shards ran
// near_dup: near-duplicates across shards (each shard saw only its own).
const StageNearDupShards = "near_dup_shards"

// NearDupSketchFile is where a sharded run's near_dup keeps the sketches of
// the tasks it kept, in the run directory, for `otcurate merge`.
const NearDupSketchFile = "near_dup.sketch"

// sketchMagic starts a sketch file; the format is: magic, threshold
// (float64), then per kept task: pool index (int64), instruction and tests
// set sizes (uint32 each), the signature of the whole sets (sigWidth
// uint16) and both sets (uint32 each), all little-endian. v2: the layout
// of v1, from shards whose near_dup ignored their boilerplate; a v1 file
// comes from a shard that did not, whose drops a merge cannot undo. v3:
// the layout of v2, with shingles hashed by the rolled n-gram hash
// (similarity.NGramHash); a v2 file's shingles are not comparable with
// them.
const (
	sketchMagic   = "otcurate near_dup sketch v3\n"
	sketchMagicV2 = "otcurate near_dup sketch v2\n"
	sketchMagicV1 = "otcurate near_dup sketch v1\n"
)

// writeSketches saves the sketches of the kept tasks to file.
func (n *NearDup) writeSketches(file string, tasks []*pipeline.Task, ids []int32, outs []pipeline.Outcome) (err error) {
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(sketchMagic)
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(n.Threshold))
	var instr, tests []uint32
	for i, t := range tasks {
		if ids[i] < 0 || outs[i].Verdict != pipeline.Keep {
			continue
		}
		id := ids[i]
		if instr, tests, err = n.store.read(id, instr, tests); err != nil {
			return err
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(t.Index))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(instr)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(tests)))
		// The signature of the whole sets, not the one Decide used (without
		// this shard's boilerplate): the merge counts the boilerplate of
		// the union itself, and signs again without it.
		for _, v := range sign(nil, instr, tests) {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
		for _, set := range [][]uint32{instr, tests} {
			for _, v := range set {
				b = binary.LittleEndian.AppendUint32(b, v)
			}
		}
		if _, err = w.Write(b); err != nil {
			return err
		}
		b = b[:0]
	}
	if _, err = w.Write(b); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// NearDupShards runs near_dup again over the survivors of every shard, in
// pool order, from the sketches the shards saved (NearDupSketchFile in
// each run directory): a task near-identical to an earlier survivor of
// another shard is dropped. The boilerplate it ignores is counted on those
// survivors (each shard counted its own on its slice). Pairs within a
// shard were resolved there.
type NearDupShards struct {
	RunDirs []string
}

// Name implements pipeline.Stage.
func (NearDupShards) Name() string { return StageNearDupShards }

// Decide implements pipeline.SetStage.
func (s NearDupShards) Decide(ctx context.Context, tasks []*pipeline.Task) ([]pipeline.Outcome, error) {
	byIndex := make(map[int64]*pipeline.Task, len(tasks))
	for _, t := range tasks {
		byIndex[t.Index] = t
	}
	var nd *NearDup
	for _, d := range s.RunDirs {
		file := filepath.Join(d, NearDupSketchFile)
		err := loadSketches(file, byIndex, func(th float64) (*NearDup, error) {
			if nd == nil {
				var err error
				nd, err = NewNearDup(th)
				return nd, err
			}
			if nd.Threshold != th {
				return nil, fmt.Errorf("threshold %g, another shard used %g", th, nd.Threshold)
			}
			return nd, nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", StageNearDupShards, file, err)
		}
	}
	if nd == nil {
		return nil, fmt.Errorf("%s: no run directories", StageNearDupShards)
	}
	return nd.Decide(ctx, tasks)
}

// loadSketches reads a sketch file into the stage open returns (given the
// file's threshold), for the tasks of byIndex.
func loadSketches(file string, byIndex map[int64]*pipeline.Task, open func(float64) (*NearDup, error)) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	head := make([]byte, len(sketchMagic)+8)
	if _, err := io.ReadFull(r, head); err != nil || string(head[:len(sketchMagic)]) != sketchMagic {
		if err == nil && string(head[:len(sketchMagicV1)]) == sketchMagicV1 {
			return errors.New("written by an older otcurate, whose near_dup did not ignore the pool's boilerplate " +
				"(templated but distinct tasks may have been dropped in that shard): build that shard again")
		}
		if err == nil && string(head[:len(sketchMagicV2)]) == sketchMagicV2 {
			return errors.New("written by an older otcurate, whose shingle hashes this one cannot compare: build that shard again")
		}
		return fmt.Errorf("not a near_dup sketch file (%v)", err)
	}
	th := math.Float64frombits(binary.LittleEndian.Uint64(head[len(sketchMagic):]))
	nd, err := open(th)
	if err != nil {
		return err
	}
	rec := make([]byte, 16+2*sigWidth)
	var raw []byte
	for {
		if _, err := io.ReadFull(r, rec); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("truncated: %w", err)
		}
		idx := int64(binary.LittleEndian.Uint64(rec))
		nI, nT := binary.LittleEndian.Uint32(rec[8:]), binary.LittleEndian.Uint32(rec[12:])
		if nI+nT > 1<<26 {
			return fmt.Errorf("corrupt record of task %d", idx)
		}
		// rec[16:] is the signature of the whole sets: near_dup signs the
		// sets again without the boilerplate of the shards' union.
		raw = append(raw[:0], make([]byte, 4*(nI+nT))...)
		if _, err := io.ReadFull(r, raw); err != nil {
			return fmt.Errorf("truncated: %w", err)
		}
		t := byIndex[idx]
		if t == nil {
			continue // dropped by a later stage of its shard
		}
		sets := make([]uint32, nI+nT)
		for k := range sets {
			sets[k] = binary.LittleEndian.Uint32(raw[4*k:])
		}
		nd.store.add(t, sets[:nI], sets[nI:])
	}
}
