// Package chaos holds the chaos runs against real iggo-server processes
// that `make test` makes: one node (TestRunRealServer), a three-node
// cluster (TestRunRealCluster) and the CI form of the exactly-once
// campaign (TestCampaignExactlyOnce). The runner, workload, fault
// injection and history checker are internal/chaos, which `iggo chaos`
// and `make chaos` also use; the runner's own tests (against the fake
// node) live there.
package chaos
