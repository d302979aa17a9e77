package session

import (
	"context"
	"testing"
)

// The memory store of `toolhost session` matches word forms as the
// databases do: a query's words and the passages' are stemmed alike.
func TestMemorySearchWordForms(t *testing.T) {
	m := NewMemory()
	m.Knowledge["faq"] = "Refunds take five business days.\n\nThe office opened in 2001.\n\nShipping is free for parcels."
	tests := []struct{ query, want string }{
		{"refund", "faq#1"},
		{"refunds", "faq#1"},
		{"refunding", "faq#1"},
		{"refunded", "faq#1"},
		{"taking", "faq#1"},
		{"open", "faq#2"},
		{"opens", "faq#2"},
		{"ships", "faq#3"},
		{"parcel", "faq#3"},
		{"Refund?", "faq#1"},
		{"zebra", ""},
	}
	for _, tt := range tests {
		ps, err := m.SearchKnowledge(context.Background(), []string{"faq"}, tt.query, 5)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(ps) > 0 {
			got = ps[0].Source
		}
		if got != tt.want {
			t.Errorf("%q finds %q (%+v), want %q", tt.query, got, ps, tt.want)
		}
	}
}
