package browser

import (
	"context"
	_ "embed" // axe-core, for Axe
	"fmt"
	"strings"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core 4.14.1 (npm axe-core, MPL-2.0: axe/LICENSE),
// vendored for the tests only: the console never serves it.
//
//go:embed axe/axe.min.js
var axeSource string

// Violation is one axe-core rule a page breaks, with the nodes that break
// it (their CSS selectors and axe's summary of what to fix).
type Violation struct {
	ID          string   `json:"id"`
	Impact      string   `json:"impact"`
	Help        string   `json:"help"`
	Nodes       []string `json:"nodes"`
	FailureText string   `json:"failure"`
}

// String formats v for a test's failure message.
func (v Violation) String() string {
	return fmt.Sprintf("%s (%s): %s at %s: %s", v.ID, v.Impact, v.Help, strings.Join(v.Nodes, ", "), v.FailureText)
}

// Axe runs axe-core on the page of ctx (injected through the DevTools
// protocol, which the page's Content-Security-Policy does not govern) and
// answers its violations of impact serious or critical, for the WCAG 2.x
// A and AA rules and axe's best practices.
func Axe(ctx context.Context) ([]Violation, error) {
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`window.axe ? true : (function(){ `+axeSource+` ; return true; })()`)); err != nil {
		return nil, fmt.Errorf("injecting axe-core: %w", err)
	}
	const run = `(async () => {
		const r = await axe.run(document, { resultTypes: ['violations'] });
		return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({
			id: v.id, impact: v.impact, help: v.help,
			nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ')),
			failure: (v.nodes[0] && v.nodes[0].failureSummary || '').slice(0, 400),
		}));
	})()`
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]Violation](run, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("running axe-core: %w", err)
	}
	return out, nil
}
