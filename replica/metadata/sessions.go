package metadata

import (
	"cmp"
	"slices"
)

// NodeMember is one client's membership as its node stamped it: the node
// holding its connection, that node's boot when it joined, and the
// client. A client in several groups through one connection is one
// NodeMember.
type NodeMember struct {
	Node   uint8
	Boot   uint64
	Client ClientID
}

// NodeMembers lists the members whose node and boot are known (Boot !=
// BootUnknown), each (node, boot, client) once, ordered by node, boot and
// client: what the metadata primary compares with the nodes' consumer
// session reports.
func (s *State) NodeMembers() []NodeMember {
	seen := map[NodeMember]bool{}
	var out []NodeMember
	for st := range s.streams.all {
		for t := range st.topics.all {
			for _, g := range t.groups {
				for _, m := range g.Members {
					nm := NodeMember{Node: m.Node, Boot: m.Boot, Client: m.Client}
					if m.Boot == BootUnknown || seen[nm] {
						continue
					}
					seen[nm] = true
					out = append(out, nm)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b NodeMember) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Boot, b.Boot),
			cmp.Compare(a.Client.Hi, b.Client.Hi), cmp.Compare(a.Client.Lo, b.Client.Lo))
	})
	return out
}
