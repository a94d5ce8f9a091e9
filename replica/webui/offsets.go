package webui

import (
	"net/http"
	"strconv"

	"github.com/iggo/iggo/wire"
)

// maxOffsetsPage bounds the partitions one group-offsets request reads
// (one GET_CONSUMER_OFFSET each): the console pages a topic's partitions.
const maxOffsetsPage = 100

// groupOffset is one partition's committed offset of a consumer group.
type groupOffset struct {
	PartitionID uint32 `json:"partition_id"`
	// CurrentOffset is the partition's last offset and StoredOffset the
	// group's committed one; both null when the group has committed
	// nothing on the partition (the command then answers no record).
	CurrentOffset *uint64 `json:"current_offset"`
	StoredOffset  *uint64 `json:"stored_offset"`
}

type groupOffsetsJSON struct {
	Partitions []groupOffset `json:"partitions"`
}

// groupOffsets answers GET /ui/api/group-offsets?stream=S&topic=T&group=G
// [&from=P][&count=N]: the group's committed offsets on partitions P ..
// P+N-1 (N at most 100, default 100; P default 0), read with the binary
// GET_CONSUMER_OFFSET for a consumer-group consumer on the caller's
// session, so the caller's permissions decide (poll on the topic). Iggy's
// REST route reads only single consumers' offsets, so the console's lag
// view needs this one.
func (c *Console) groupOffsets(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var idv [3]wire.Identifier
	for i, k := range []string{"stream", "topic", "group"} {
		id, ok := parseID(q.Get(k))
		if !ok {
			writeError(w, http.StatusBadRequest, "invalid_query", "Invalid query: "+k+": a numeric id or a name is required")
			return
		}
		idv[i] = id
	}
	from, count := uint64(0), uint64(maxOffsetsPage)
	for k, dst := range map[string]*uint64{"from": &from, "count": &count} {
		if v := q.Get(k); v != "" {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				writeError(w, http.StatusBadRequest, "invalid_query", "Invalid query: "+k+": "+err.Error())
				return
			}
			*dst = n
		}
	}
	if count == 0 || count > maxOffsetsPage || from+count-1 > 0xFFFFFFFF {
		writeError(w, http.StatusBadRequest, "invalid_query", "Invalid query: count: 1 to "+strconv.Itoa(maxOffsetsPage)+" partitions from a u32 partition id")
		return
	}
	out := groupOffsetsJSON{Partitions: make([]groupOffset, 0, count)}
	for p := from; p < from+count; p++ {
		req := wire.GetConsumerOffset{Consumer: wire.GroupConsumer(idv[2]), StreamID: idv[0], TopicID: idv[1],
			Partition: wire.SomePartition(uint32(p))}
		o := groupOffset{PartitionID: uint32(p)}
		// A reply that does not decode is refused by Run (500).
		if !c.opt.Run(w, r, &req, func(payload []byte) error {
			if len(payload) == 0 {
				return nil
			}
			info, err := wire.DecodeConsumerOffsetInfo(payload)
			if err != nil {
				return err
			}
			cur, st := info.CurrentOffset, info.StoredOffset
			o.CurrentOffset, o.StoredOffset = &cur, &st
			return nil
		}) {
			return
		}
		out.Partitions = append(out.Partitions, o)
	}
	writeJSON(w, http.StatusOK, out)
}

// parseID reads an identifier as the API's paths do: numeric when it
// parses as a u32, a name otherwise.
func parseID(v string) (wire.Identifier, bool) {
	if v == "" || len(v) > 255 {
		return wire.Identifier{}, false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return wire.NumericID(uint32(n)), true
	}
	id, err := wire.NamedID(v)
	return id, err == nil
}
