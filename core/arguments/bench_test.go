package arguments

import "testing"

// BenchmarkCheck validates a typical call's arguments: the gate every call
// passes.
func BenchmarkCheck(b *testing.B) {
	ps := params(&testing.T{}, "client_name:str", "client_email:str | None", "age?:int", "tags?:list[str]", "when?:datetime.date")
	raw := []byte(`{"client_name":"Ann Lee","client_email":"ann@example.com","age":31,"tags":["vip","new"],"when":"2024-02-29"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(ps, raw); err != nil {
			b.Fatal(err)
		}
	}
}
