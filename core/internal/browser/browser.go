// Package browser starts a headless Chromium for the tests that drive
// toolhost's web console in a real browser (through chromedp), and keeps a
// full-page screenshot of the page when such a test fails.
//
// Chromium is a test dependency like python3: `make tools` (run by
// `make test`) installs Debian's chromium package when none is found, and a
// test that needs it fails, never skips, when it is missing.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Names are the executables looked for on PATH, in order.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Timeout bounds a test's use of its browser (New): every action run on
// the context New returns fails once it has passed.
const Timeout = 60 * time.Second

// ScreenshotsEnv names the environment variable that chooses the folder of
// the screenshots of failed tests; without it they go to
// toolhost-screenshots under the system's temporary folder.
const ScreenshotsEnv = "TOOLHOST_SCREENSHOTS"

// Find returns the path of the Chromium executable.
func Find() (string, error) {
	for _, n := range Names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found (looked for %s on PATH): `make tools` installs Debian's chromium package", strings.Join(Names, ", "))
}

// New starts a headless Chromium with one tab for the test and returns the
// tab's chromedp context, which ends after Timeout. At the test's cleanup
// the browser is closed; before that, if the test failed, a full-page PNG
// of the tab is written to ScreenshotsDir (its path is logged) and the
// page's console messages and uncaught exceptions are logged. Without
// Chromium the test fails.
func New(t testing.TB) context.Context {
	t.Helper()
	return NewTimeout(t, Timeout)
}

// NewTimeout is New with another bound than Timeout.
func NewTimeout(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	path, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		// Tests run as root in a container: Chromium's sandbox needs user
		// namespaces it may not have, there is no GPU, and /dev/shm is
		// small.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	var (
		mu   sync.Mutex
		done bool
		logs []string
	)
	keep := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			logs = append(logs, line)
		}
	}
	logf := func(format string, args ...any) { keep("chromedp: " + fmt.Sprintf(format, args...)) }
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithErrorf(logf), chromedp.WithLogf(logf))

	// The first action starts the browser and binds its life to the
	// context it runs on: that one has no timeout (the test's own context,
	// derived from it, has).
	startCtx, cancelStart := context.WithTimeout(context.Background(), 30*time.Second)
	stopStart := context.AfterFunc(startCtx, cancelTab)
	err = chromedp.Do(tabCtx)
	stopped := stopStart()
	cancelStart()
	if err != nil || !stopped {
		cancelTab()
		cancelAlloc()
		if err == nil {
			err = errors.New("timed out")
		}
		t.Fatalf("starting Chromium (%s): %v", path, err)
	}

	// The page's console, kept for a failure's report.
	console := chromedp.Console(tabCtx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			line := "console " + m.String()
			if m.URL != "" {
				line += fmt.Sprintf(" (%s:%d)", m.URL, m.Line+1)
			}
			keep(line)
		}
	})

	ctx, cancel := context.WithTimeout(tabCtx, timeout)
	t.Cleanup(func() {
		cancel()
		if t.Failed() {
			shotCtx, cancelShot := context.WithTimeout(tabCtx, 10*time.Second)
			if p, err := Screenshot(shotCtx, ScreenshotsDir(), t.Name()); err != nil {
				t.Logf("no screenshot of the failed test: %v", err)
			} else {
				t.Logf("screenshot of the failed test: %s", p)
			}
			cancelShot()
		}
		closeCtx, cancelClose := context.WithTimeout(tabCtx, 10*time.Second)
		_ = chromedp.Cancel(closeCtx)
		cancelClose()
		cancelTab()
		cancelAlloc()
		wg.Wait()
		mu.Lock()
		done = true
		lines := logs
		mu.Unlock()
		if t.Failed() && len(lines) > 0 {
			t.Logf("the browser's console and chromedp's messages:\n\t%s", strings.Join(lines, "\n\t"))
		}
	})
	return ctx
}

// ScreenshotsDir is the folder of the screenshots of failed tests:
// $TOOLHOST_SCREENSHOTS, or toolhost-screenshots under os.TempDir().
func ScreenshotsDir() string {
	if d := os.Getenv(ScreenshotsEnv); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "toolhost-screenshots")
}

// Screenshot writes a full-page PNG of the tab of ctx to dir (created if
// needed) as name.png, name made safe for a file name (a test's name with
// its subtests' slashes, for example), and returns its path.
func Screenshot(ctx context.Context, dir, name string) (string, error) {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, FileName(name)+".png")
	return p, os.WriteFile(p, png, 0o644)
}

// FileName turns a test's name into a file name: letters, digits, '-',
// '_' and '.' are kept, anything else becomes '_'.
func FileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			b[i] = '_'
		}
	}
	s := strings.Trim(string(b), ".")
	if s == "" {
		s = "test"
	}
	return s
}
