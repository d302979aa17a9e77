package plugins

import "testing"

func TestLimitsDefaults(t *testing.T) {
	l := Limits{Workers: 9}.WithDefaults()
	if l.Workers != 9 || l.MemoryBytes != DefaultLimits.MemoryBytes || l.ResultBytes != 1<<20 || l.OutputBytes != 64<<10 {
		t.Errorf("limits = %+v", l)
	}
}
