package config

import (
	"net/netip"
	"testing"
)

func TestClientHost(t *testing.T) {
	sel := func(cidr, addr string) AdvertiseSelector { return AdvertiseSelector{ClientCIDR: cidr, Address: addr} }
	full := ClusterNode{
		IP:                "192.168.1.5",
		AdvertisedAddress: "node-a.example",
		AdvertisedAddresses: []AdvertiseSelector{
			sel("10.0.0.0/8", "10.1.1.1"),
			sel("10.2.0.0/16", "10.2.0.9"), // nested: wins inside 10.2/16
			sel("10.2.3.4/32", "[fd00::7]"),
			sel("fd00::/8", "fd00::5"),
			sel("fd00:1::/32", "[fd00:1::5]"),
			sel("::ffff:172.16.0.0/108", "172.16.0.1"), // v4-mapped CIDR means 172.16.0.0/12
		},
	}
	for _, tc := range []struct {
		name   string
		node   ClusterNode
		client string // "" = unknown peer
		want   string
	}{
		{"v4 in outer cidr", full, "10.9.9.9", "10.1.1.1"},
		{"v4 in nested cidr", full, "10.2.200.1", "10.2.0.9"},
		{"v4 host route, v6 answer unbracketed", full, "10.2.3.4", "fd00::7"},
		{"v4-mapped client", full, "::ffff:10.9.9.9", "10.1.1.1"},
		{"v4 client vs v4-mapped cidr", full, "172.20.1.1", "172.16.0.1"},
		{"v6 in outer", full, "fd12::1", "fd00::5"},
		{"v6 in nested, bracketed config", full, "fd00:1::99", "fd00:1::5"},
		{"v6 with zone", full, "fd00:1::99%eth0", "fd00:1::5"},
		{"no match: catch-all", full, "8.8.8.8", "node-a.example"},
		{"v6 no match: catch-all", full, "2001:db8::1", "node-a.example"},
		{"unknown peer: catch-all", full, "", "node-a.example"},
		{"no advertised: roster ip", ClusterNode{IP: "192.168.1.5"}, "10.0.0.1", "192.168.1.5"},
		{"selectors only, no match: roster ip", ClusterNode{IP: "::1", AdvertisedAddresses: []AdvertiseSelector{sel("10.0.0.0/8", "a.example")}}, "11.0.0.1", "::1"},
		{"selectors only, match", ClusterNode{IP: "::1", AdvertisedAddresses: []AdvertiseSelector{sel("10.0.0.0/8", "a.example")}}, "10.0.0.1", "a.example"},
		{"bracketed v6 catch-all", ClusterNode{IP: "10.0.0.1", AdvertisedAddress: "[2001:db8::0001]"}, "10.0.0.2", "2001:db8::1"},
		{"mapped roster ip unmapped", ClusterNode{IP: "::ffff:10.0.0.1"}, "10.0.0.2", "10.0.0.1"},
		{"default route selector", ClusterNode{IP: "10.0.0.1", AdvertisedAddresses: []AdvertiseSelector{sel("0.0.0.0/0", "pub.example")}}, "1.2.3.4", "pub.example"},
		{"v4 default route does not catch v6", ClusterNode{IP: "10.0.0.1", AdvertisedAddresses: []AdvertiseSelector{sel("0.0.0.0/0", "pub.example")}}, "2001:db8::1", "10.0.0.1"},
	} {
		var client netip.Addr
		if tc.client != "" {
			client = netip.MustParseAddr(tc.client)
		}
		if got := tc.node.ClientHost(client); got != tc.want {
			t.Errorf("%s: ClientHost(%s) = %q, want %q", tc.name, tc.client, got, tc.want)
		}
	}
}

// TestClientHostAgreesWithValidation: a roster Validate accepts never hands
// one client the same host for two nodes.
func TestClientHostAgreesWithValidation(t *testing.T) {
	c := Default()
	clustered(c)
	c.Cluster.Nodes[0].AdvertisedAddress = "10.0.0.1"
	c.Cluster.Nodes[0].AdvertisedAddresses = []AdvertiseSelector{{ClientCIDR: "192.168.0.0/16", Address: "192.168.0.1"}}
	c.Cluster.Nodes[1].AdvertisedAddress = "10.0.0.2"
	c.Cluster.Nodes[1].AdvertisedAddresses = []AdvertiseSelector{{ClientCIDR: "192.168.0.0/16", Address: "192.168.0.2"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, client := range []string{"192.168.4.4", "10.0.0.9", "::1"} {
		a := c.Cluster.Nodes[0].ClientHost(netip.MustParseAddr(client))
		b := c.Cluster.Nodes[1].ClientHost(netip.MustParseAddr(client))
		if a == b {
			t.Errorf("client %s: both nodes resolve to %s", client, a)
		}
	}
}
