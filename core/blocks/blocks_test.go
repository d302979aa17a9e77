package blocks

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSpecBlocks validates the block examples of spec 000 as written.
func TestSpecBlocks(t *testing.T) {
	good := []string{
		`{"type":"chart","spec":{"type":"bar","title":"Цены","labels":["Q1","Q2","Q3","Q4"],"series":[{"name":"Цена","values":[10,20,15,30]}],"options":{"stacked":false}}}`,
		`{"type":"table","columns":[{"key":"model","title":"Модель","align":"left"},{"key":"price","title":"Цена","align":"right"}],"rows":[{"model":"A","price":100}],"page_info":{"returned":50,"total":500,"has_more":true},"options":{"sortable":true,"searchable":true}}`,
		`{"type":"file","name":"report.html","mime":"text/html","data":"PGgxPkhpPC9oMT4="}`,
		`{"type":"map","title":"Академгородок","center":{"lat":54.85,"lon":83.10},"zoom":14,"markers":[{"lat":54.85,"lon":83.10,"label":"Академ"}],"tile_url":"https://tile.openstreetmap.org/{z}/{x}/{y}.png","attribution":"© OpenStreetMap contributors","link":"https://www.openstreetmap.org/?mlat=54.85&mlon=83.10#map=14/54.85/83.10"}`,
		`{"type":"text","markdown":"Найдено **2**"}`,
	}
	for _, g := range good {
		if _, err := Validate(decode(t, g)); err != nil {
			t.Errorf("%.50s: %v", g, err)
		}
	}
	bad := map[string]string{
		`{"type":"chart","spec":{"type":"donut","series":[{"values":[1]}]}}`:                "bar, line, area, pie or scatter",
		`{"type":"chart","spec":{"type":"bar","labels":["a"],"series":[{"values":[1,2]}]}}`: "2 values for 1 labels",
		`{"type":"chart","spec":{"type":"bar","series":[{"values":["x"]}]}}`:                "not a number",
		`{"type":"table","columns":[],"rows":[{"a":1}]}`:                                    "needs columns",
		`{"type":"table","columns":[{"key":"a"}],"rows":"[{}]"}`:                            "rows (a list of objects), got a string",
		`{"type":"table","columns":[{"key":"a","align":"middle"}],"rows":[]}`:               "align must be",
		`{"type":"file","name":"a","mime":"b","data":"!!!"}`:                                "base64",
		`{"type":"map","center":{"lat":95,"lon":0}}`:                                        "lat in [-90, 90]",
		`{"type":"video"}`: `unknown block type "video"`,
		`[1]`:              "must be an object",
	}
	for b, want := range bad {
		if _, err := Validate(decode(t, b)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", b, err, want)
		}
	}
	// A bare chart spec becomes a chart block.
	b, err := Validate(decode(t, `{"type":"pie","labels":["a","b"],"series":[{"name":"s","values":[1,2]}]}`))
	if err != nil || b["type"] != "chart" {
		t.Errorf("bare spec: %v %v", b, err)
	}
}

func TestParseMarkdown(t *testing.T) {
	md := "Here are the prices:\n\n```chart\n{\"type\":\"line\",\"labels\":[\"a\",\"b\"],\"series\":[{\"name\":\"p\",\"values\":[1,2]}]}\n```\n\nAnd the table:\n```table\n{\"columns\":[{\"key\":\"m\"}],\"rows\":[{\"m\":\"A\"}]}\n```\nDone."
	bs, err := ParseMarkdown(md)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, b := range bs {
		types = append(types, b["type"].(string))
	}
	if strings.Join(types, ",") != "text,chart,text,table,text" || bs[0]["markdown"] != "Here are the prices:" {
		t.Errorf("blocks = %v", bs)
	}
	if _, err := ParseMarkdown("```table\n{\"columns\":[]}\n```"); err == nil || !strings.Contains(err.Error(), "fenced block 1 (table)") {
		t.Errorf("bad fenced block: %v", err)
	}
	if _, err := ParseMarkdown("```chart\nnot json\n```"); err == nil {
		t.Error("non-JSON fenced block accepted")
	}
}

// TestParseMarkdownForms parses each form of a fenced block: the JSON on
// the lines after the opening, and on the opening's own line (the
// one-line form), closed on that line or the next.
func TestParseMarkdownForms(t *testing.T) {
	const chart = `{"type":"bar","labels":["a","b"],"series":[{"name":"p","values":[1,2]}]}`
	const table = `{"rows":[{"model":"A","price":1}]}`
	cases := []struct {
		name, md string
		want     string // the blocks' types, in order
		err      string // a part of the error, when one is wanted
	}{
		{"next lines", "Prices:\n```chart\n" + chart + "\n```\nDone.", "text,chart,text", ""},
		{"one line", "Prices: ```chart " + chart + "``` Done.", "text,chart,text", ""},
		{"one line, spaces", "```chart   " + chart + "   ```", "chart", ""},
		{"one line, no space", "```chart" + chart + "```", "chart", ""},
		{"one line, closed on the next", "```table " + table + "\n```\nafter", "table,text", ""},
		{"one line JSON over lines", "```table {\n\"rows\": [{\"a\": 1}]\n}\n```", "table", ""},
		{"one line, a ``` inside a string", "```table {\"rows\":[{\"a\":\"x```y\"}]}```", "table", ""},
		{"two one-line blocks", "```chart " + chart + "``` and ```table " + table + "```", "chart,text,table", ""},
		{"one-line and next-line forms", "```table " + table + "```\n```chart\n" + chart + "\n```", "table,chart", ""},
		{"another language", "```python {\"a\": 1}```", "text", ""},
		{"a longer tag", "```charts {\"a\": 1}```", "text", ""},
		{"tag then words", "```chart of prices```", "text", ""},
		{"empty fence", "```chart\n```", "text", ""},
		{"one line, not JSON", "```chart {not json}```", "", "fenced block 1 (chart) is not a JSON object"},
		{"one line, unclosed", "```chart " + chart + " and more", "", "must be followed by the closing ```"},
		{"one line, invalid chart", "```chart {\"type\":\"donut\",\"series\":[{\"values\":[1]}]}```", "", "fenced block 1 (chart): a chart's type"},
		{"second block counted", "```table " + table + "``` ```table {\"rows\":3}```", "", "fenced block 2 (table)"},
		{"null table", "```table\nnull\n```", "", "fenced block 1 (table) is not a JSON object: null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bs, err := ParseMarkdown(c.md)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, b := range bs {
				types = append(types, b["type"].(string))
			}
			if got := strings.Join(types, ","); got != c.want {
				t.Fatalf("blocks %s (%v), want %s", got, bs, c.want)
			}
			for _, b := range bs {
				if b["type"] == "text" && strings.Contains(b["markdown"].(string), `"series"`) && c.want != "text" {
					t.Errorf("a block's JSON left in the text: %v", b)
				}
			}
		})
	}
	// The one-line table keeps its rows' key order for its columns.
	bs, err := ParseMarkdown("```table " + table + "```")
	if err != nil {
		t.Fatal(err)
	}
	cols := bs[0]["columns"].([]any)
	if len(cols) != 2 || cols[0].(map[string]any)["key"] != "model" || cols[1].(map[string]any)["key"] != "price" {
		t.Errorf("columns = %v", cols)
	}
}

func FuzzParseMarkdown(f *testing.F) {
	f.Add("text ```chart\n{\"type\":\"bar\",\"series\":[{\"values\":[1]}]}\n``` more")
	f.Add("a ```chart {\"type\":\"bar\",\"series\":[{\"values\":[1]}]}``` b ```table {\"rows\":[{\"a\":1}]}\n```")
	f.Add("```table {\"rows\":[{\"b\":2}]} ```chart\nnull\n```")
	f.Add("```table\n{}\n```")
	f.Fuzz(func(t *testing.T, md string) {
		bs, err := ParseMarkdown(md)
		if err == nil {
			for _, b := range bs {
				if _, err := Validate(b); err != nil {
					t.Fatalf("returned an invalid block %v: %v", b, err)
				}
			}
		}
	})
}

// TestREADMERenderExample renders README's example of a model's answer
// with fenced blocks (the ````markdown block of README.md, both forms of
// the fence) and compares the blocks with the ```json list README shows
// after it.
func TestREADMERenderExample(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const open, close, list = "````markdown\n", "\n````\n", "```json\n["
	i := strings.Index(readme, open)
	if i < 0 {
		t.Fatal("README has no example of a model's answer with fenced blocks")
	}
	md := readme[i+len(open):]
	j := strings.Index(md, close)
	k := strings.Index(md, list)
	if j < 0 || k < j {
		t.Fatal("README's example of fenced blocks is not closed, or not followed by its blocks")
	}
	want := md[k+len(list)-1:]
	want = want[:strings.Index(want, "```")]
	md = md[:j+1]
	if !strings.Contains(md, "```chart {") || !strings.Contains(md, "```table\n") {
		t.Errorf("README's example lacks a form of the fence:\n%s", md)
	}
	got, err := ParseMarkdown(md)
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	var g, w any
	json.Unmarshal(gotJSON, &g)
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("README's blocks: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("README's example renders\n%s\nREADME says\n%s", gotJSON, want)
	}
}
