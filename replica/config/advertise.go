package config

import (
	"net/netip"
	"strings"
)

// ClientHost is the host a client at address client is told to dial for
// this node (GET_CLUSTER_METADATA's ip field): the advertised_addresses
// entry with the longest client_cidr containing the client, else
// advertised_address, else the roster ip. It is the rule Validate checks
// for collisions (a longer prefix wins inside a shorter one), so two nodes
// never resolve to one endpoint for the same client.
//
// The client address is compared without its zone and with an IPv4-mapped
// IPv6 address (a v4 client on a dual-stack socket) as the IPv4 address; an
// invalid client address (unknown peer) matches no selector. IP literals come
// back in canonical form without brackets (the SDKs join host and port
// themselves); host names as configured.
func (n ClusterNode) ClientHost(client netip.Addr) string {
	if client.IsValid() {
		client = client.WithZone("").Unmap()
		best, bestBits := "", -1
		for _, s := range n.AdvertisedAddresses {
			pfx, err := netip.ParsePrefix(s.ClientCIDR)
			if err != nil {
				continue // Validate refuses it
			}
			pfx = canonicalPrefix(pfx)
			if pfx.Contains(client) && pfx.Bits() > bestBits {
				best, bestBits = s.Address, pfx.Bits()
			}
		}
		if bestBits >= 0 {
			return dialHost(best)
		}
	}
	if n.AdvertisedAddress != "" {
		return dialHost(n.AdvertisedAddress)
	}
	return dialHost(n.IP)
}

// dialHost strips the brackets an IPv6 literal may be written with and
// canonicalises IP literals (IPv4-mapped ones to IPv4).
func dialHost(s string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if ip, err := netip.ParseAddr(inner); err == nil {
		return ip.Unmap().String()
	}
	return s
}
