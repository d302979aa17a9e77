package plugins

import (
	"testing"

	"toolhost/plugins/frame"
)

func TestLimitsDefaults(t *testing.T) {
	l := Limits{Workers: 9}.WithDefaults()
	if l.Workers != 9 || l.MemoryBytes != DefaultLimits.MemoryBytes || l.ResultBytes != 1<<20 || l.OutputBytes != 64<<10 {
		t.Errorf("limits = %+v", l)
	}
}

// AnswerBytes covers every part of an answer at its limit and never passes
// the largest frame.
func TestAnswerBytes(t *testing.T) {
	tests := []struct {
		limits Limits
		want   int
	}{
		{Limits{}, 1<<20 + 6*(64<<10) + 12*ErrorTextBytes + 64<<10},
		{Limits{ResultBytes: 100, OutputBytes: 10}, 100 + 60 + 12*ErrorTextBytes + 64<<10},
		{Limits{ResultBytes: 1 << 30}, frame.MaxSize},
	}
	for _, tt := range tests {
		if got := tt.limits.AnswerBytes(); got != tt.want {
			t.Errorf("%+v: AnswerBytes() = %d, want %d", tt.limits, got, tt.want)
		}
	}
	if maxFrame != frame.MaxSize {
		t.Errorf("maxFrame = %d, frame.MaxSize = %d", maxFrame, frame.MaxSize)
	}
}
