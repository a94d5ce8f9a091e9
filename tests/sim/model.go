package sim

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// kvInput is one client operation on the register store.
type kvInput struct {
	put bool
	key uint8
	val uint64
}

// kvOutput is its result; unknown marks an operation whose outcome the client
// never learned (it may or may not have taken effect).
type kvOutput struct {
	val     uint64
	unknown bool
}

// kvModel is a linearizable register per key: Put returns the previous value,
// Get the current one.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[uint8][]porcupine.Operation{}
		var keys []uint8
		for _, op := range history {
			k := op.Input.(kvInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return uint64(0) },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s := state.(uint64)
		in := input.(kvInput)
		out := output.(kvOutput)
		if in.put {
			return out.unknown || out.val == s, in.val
		}
		return out.unknown || out.val == s, s
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(kvInput), output.(kvOutput)
		res := fmt.Sprint(out.val)
		if out.unknown {
			res = "?"
		}
		if in.put {
			return fmt.Sprintf("put(%d, %d) -> %s", in.key, in.val, res)
		}
		return fmt.Sprintf("get(%d) -> %s", in.key, res)
	},
}

// checkLinearizable runs porcupine over one group's history.
func checkLinearizable(history []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, error) {
	res, _ := porcupine.CheckOperationsVerbose(kvModel, history, timeout)
	if res == porcupine.Illegal {
		return res, fmt.Errorf("client history of %d operations is not linearizable", len(history))
	}
	return res, nil
}
