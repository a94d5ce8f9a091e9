package fault

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

type recorded struct {
	cmds []string
	fail string // a command containing this fails
	out  string
}

func (r *recorded) run(name string, args ...string) ([]byte, error) {
	line := name + " " + strings.Join(args, " ")
	r.cmds = append(r.cmds, line)
	if r.fail != "" && strings.Contains(line, r.fail) {
		return nil, errors.New("failed")
	}
	return []byte(r.out), nil
}

func TestDockerNodeCommands(t *testing.T) {
	r := &recorded{out: "true\n"}
	n := &DockerNode{Container: "iggo-node-1", Run: r.run}
	steps := []func() error{n.Kill, func() error { return n.Start(false) }, n.Pause, n.Resume}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	if !n.Running() || n.DataDir() != "" {
		t.Error("running/datadir")
	}
	want := []string{
		"docker kill --signal KILL iggo-node-1",
		"docker start iggo-node-1",
		"docker pause iggo-node-1",
		"docker unpause iggo-node-1",
		"docker inspect --format {{.State.Running}} iggo-node-1",
	}
	if !reflect.DeepEqual(r.cmds, want) {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(r.cmds, "\n"), strings.Join(want, "\n"))
	}
	if err := n.Start(true); !errors.Is(err, ErrUnsupported) {
		t.Errorf("fresh start: %v", err)
	}
	r.out = "false\n"
	if n.Running() {
		t.Error("running when docker says false")
	}
}

func TestDockerNetworkCommands(t *testing.T) {
	r := &recorded{}
	d := &DockerNetwork{Network: "iggo_net", Containers: []string{"n0", "n1", "n2"},
		IPs: []string{"172.30.0.10", "172.30.0.11", "172.30.0.12"}, ClientIP: "172.30.0.1", Run: r.run}
	if err := d.Block(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Block(Client, 2); err != nil {
		t.Fatal(err)
	}
	if err := d.Isolate(1); err != nil {
		t.Fatal(err)
	}
	if err := d.Heal(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"iptables -I DOCKER-USER -s 172.30.0.10 -d 172.30.0.11 -m comment --comment iggo-chaos -j DROP",
		"iptables -I DOCKER-USER -s 172.30.0.1 -d 172.30.0.12 -m comment --comment iggo-chaos -j DROP",
		"docker network disconnect --force iggo_net n1",
		"docker network connect --ip 172.30.0.11 iggo_net n1",
		"iptables -D DOCKER-USER -s 172.30.0.10 -d 172.30.0.11 -m comment --comment iggo-chaos -j DROP",
		"iptables -D DOCKER-USER -s 172.30.0.1 -d 172.30.0.12 -m comment --comment iggo-chaos -j DROP",
	}
	if !reflect.DeepEqual(r.cmds, want) {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(r.cmds, "\n"), strings.Join(want, "\n"))
	}
	// Healed state is forgotten: a second heal runs nothing.
	r.cmds = nil
	if err := d.Close(); err != nil || len(r.cmds) != 0 {
		t.Errorf("second heal ran %v, %v", r.cmds, err)
	}
	if err := d.Block(0, 9); err == nil {
		t.Error("block to an unknown node accepted")
	}
	if err := d.Isolate(5); err == nil {
		t.Error("isolate of an unknown node accepted")
	}
	r.fail = "disconnect"
	if err := d.Isolate(0); err == nil {
		t.Error("failed docker command not reported")
	}
}
