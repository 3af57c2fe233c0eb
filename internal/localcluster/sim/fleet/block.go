package fleet

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/tpu"
)

// BlockSpec declares one tpu7x block for dynamic slicing: SubBlocks
// 4x4x4 sub-blocks (16 hosts of 4 chips each, one node pool per
// sub-block), laid out as Layout says, which decides which sub-blocks are
// adjacent and so which slices can be stitched from them.
type BlockSpec struct {
	Name      string `json:"name"`
	SubBlocks int    `json:"subBlocks"`
	// Layout is the grid of sub-blocks, AxBxC (A*B*C = SubBlocks), sub-block
	// i at x = i mod A, y = (i / A) mod B, z = i / (A*B); default 1x1xN, a row.
	Layout string `json:"layout,omitempty"`
}

// layout is the block's grid of sub-blocks.
func (b BlockSpec) layout() (slicing.Pos, error) {
	if b.Layout == "" {
		return slicing.Pos{1, 1, b.SubBlocks}, nil
	}
	t, err := tpu.ParseTopology(b.Layout)
	if err != nil || len(t) != 3 {
		return slicing.Pos{}, fmt.Errorf("layout %q: want AxBxC sub-blocks, for example 1x2x3", b.Layout)
	}
	if t.Chips() != b.SubBlocks {
		return slicing.Pos{}, fmt.Errorf("layout %s holds %d sub-blocks, but subBlocks is %d: make them agree", b.Layout, t.Chips(), b.SubBlocks)
	}
	return slicing.Pos{t[0], t[1], t[2]}, nil
}

// pools are the block's sub-blocks as node pools: <block>-sb-<i>, each
// labelled with its block, its partition id (the pool's name) and its
// position in the block.
func (b BlockSpec) pools() ([]Pool, error) {
	var errs []error
	if msgs := validation.IsDNS1123Label(b.Name); len(msgs) > 0 || len(b.Name) > 30 {
		errs = append(errs, fmt.Errorf("name %q: must be a lowercase DNS label of at most 30 characters", b.Name))
	}
	if b.SubBlocks < 1 {
		errs = append(errs, fmt.Errorf("subBlocks: must be at least 1 (got %d)", b.SubBlocks))
	}
	size, err := b.layout()
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]Pool, b.SubBlocks)
	for i := range out {
		pos := slicing.Pos{i % size[0], i / size[0] % size[1], i / (size[0] * size[1])}
		name := fmt.Sprintf("%s-sb-%d", b.Name, i)
		out[i] = Pool{Name: name, Accelerator: slicev1beta1.TPU7x, Topology: tpu.CubeTopology, Labels: map[string]string{
			gke.TopologyBlockLabel: b.Name, gke.PartitionCubeLabel: name, slicev1beta1.PartitionPositionLabel: pos.String(),
		}}
	}
	return out, nil
}
