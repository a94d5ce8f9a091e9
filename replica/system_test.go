package replica

import (
	"math"
	"testing"
	"time"
)

func TestCPUMeterWindows(t *testing.T) {
	t0 := time.Unix(1_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type call struct {
		s          cpuSample
		proc, host float32
	}
	cases := []struct {
		name  string
		calls []call
	}{
		{"first call averages since the process started", []call{
			// 2 s after start, 100 ticks = 1 CPU-second: 50 % of one CPU;
			// host since boot: 300 busy of 1200.
			{cpuSample{at: at(2000), procTicks: 100, sysBusy: 300, sysTotal: 1200}, 50, 25},
		}},
		{"a later call measures since the previous one", []call{
			{cpuSample{at: at(2000), procTicks: 100, sysBusy: 300, sysTotal: 1200}, 50, 25},
			{cpuSample{at: at(4000), procTicks: 500, sysBusy: 700, sysTotal: 1600}, 200, 100},
		}},
		{"a call inside the window measures since the older base", []call{
			{cpuSample{at: at(2000), procTicks: 100, sysBusy: 300, sysTotal: 1200}, 50, 25},
			{cpuSample{at: at(4000), procTicks: 300, sysBusy: 500, sysTotal: 1600}, 100, 50},
			// 5 ms after the last sample: measured from the 2 s sample.
			{cpuSample{at: at(4005), procTicks: 300, sysBusy: 500, sysTotal: 1601}, float32(200.0 / 100 / 2.005 * 100), float32(200.0 / 401 * 100)},
			// A call a window after the last sample moves on.
			{cpuSample{at: at(5000), procTicks: 310, sysBusy: 550, sysTotal: 1800}, 10, 25},
		}},
		{"idle process reports zero, not a negative or NaN", []call{
			{cpuSample{at: at(1500), procTicks: 0, sysBusy: 0, sysTotal: 0}, 0, 0},
			{cpuSample{at: at(3000), procTicks: 0, sysBusy: 0, sysTotal: 0}, 0, 0},
		}},
		{"counters that go backwards report zero", []call{
			{cpuSample{at: at(2000), procTicks: 100, sysBusy: 300, sysTotal: 1200}, 50, 25},
			{cpuSample{at: at(4000), procTicks: 50, sysBusy: 200, sysTotal: 1300}, 0, 0},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := 0
			m := newCPUMeter(t0, func() cpuSample { return c.calls[i].s })
			for ; i < len(c.calls); i++ {
				proc, host := m.usage()
				want := c.calls[i]
				if math.Abs(float64(proc-want.proc)) > 1e-3 || math.Abs(float64(host-want.host)) > 1e-3 {
					t.Fatalf("call %d: usage = %v %%, %v %%; want %v %%, %v %%", i, proc, host, want.proc, want.host)
				}
			}
		})
	}
}

// TestCPUMeterReadsProc checks the /proc readers against this process: it
// burns CPU and expects the first reading (the average since start) to see
// it.
func TestCPUMeterReadsProc(t *testing.T) {
	start := time.Now()
	m := newCPUMeter(start, readCPUSample)
	before := readProcTicks()
	x := uint64(1)
	for readProcTicks() < before+3 {
		for i := 0; i < 1_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("utime+stime did not advance by 3 ticks in 20 s of busy work (x=%d)", x)
		}
	}
	busy, total := readSysTicks()
	if total == 0 || busy == 0 || busy > total {
		t.Fatalf("/proc/stat: busy %d of %d ticks", busy, total)
	}
	proc, host := m.usage()
	if proc <= 0 || host <= 0 || host > 100 {
		t.Fatalf("usage after busy work: process %v %%, host %v %%", proc, host)
	}
}
