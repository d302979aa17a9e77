package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"toolhost/storage"
)

// The data folder rule: only toolhost serve (on its first start) and
// toolhost tenant create --init create a data folder and its database.
// Every other command that opens the store (tenant ..., logs) refuses a
// --data that holds no toolhost database, naming the folder, instead of
// creating an empty one there (whose tokens the running server would not
// know).

// DataEnv is the environment variable that gives --data its default.
const DataEnv = "TOOLHOST_DATA"

// dbFile is the SQLite database's name in a data folder.
const dbFile = "toolhost.db"

// addDataFlag adds --data, with its default from $TOOLHOST_DATA or ./data.
func addDataFlag(fs *flag.FlagSet, usage string) *string {
	def := os.Getenv(DataEnv)
	if def == "" {
		def = "./data"
	}
	return fs.String("data", def, usage+" ($"+DataEnv+" when not given)")
}

// openExistingStore opens the store that --data and --db name, as
// openStore does, but creates no data folder nor database unless create:
// on SQLite the folder must hold a toolhost database already; on
// PostgreSQL a --data that does not exist is left uncreated (the command
// keeps its local caches in a temporary folder, removed at Close).
func openExistingStore(ctx context.Context, data, dbURL string, create bool) (storage.Store, error) {
	if dbURL == "" {
		dbURL = os.Getenv(DBEnv)
	}
	if create {
		return openStore(ctx, data, dbURL)
	}
	if storage.IsPostgresURL(dbURL) {
		if _, err := os.Stat(data); err == nil {
			return openStore(ctx, data, dbURL)
		}
		tmp, err := os.MkdirTemp("", "toolhost-cache-")
		if err != nil {
			return nil, err
		}
		s, err := openStore(ctx, tmp, dbURL)
		if err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		return &tempDirStore{Store: s, dir: tmp}, nil
	}
	if err := checkDataFolder(data); err != nil {
		return nil, err
	}
	return openStore(ctx, data, dbURL)
}

// checkDataFolder reports why data holds no toolhost database, or nil.
func checkDataFolder(data string) error {
	name := data
	if abs, err := filepath.Abs(data); err == nil && abs != filepath.Clean(data) {
		name = fmt.Sprintf("%s (%s)", data, abs)
	}
	how := `give the --data of your server (or set $` + DataEnv + `); "toolhost serve --data DIR" creates a new data folder on its first start, and so does "toolhost tenant create --init NAME --data DIR"`
	st, err := os.Stat(data)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no data folder %s: %s", name, how)
	case err != nil:
		return fmt.Errorf("data folder %s: %w", name, err)
	case !st.IsDir():
		return fmt.Errorf("--data %s is not a folder", name)
	}
	if _, err := os.Stat(filepath.Join(data, dbFile)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the data folder %s holds no toolhost database (%s): %s", name, dbFile, how)
	} else if err != nil {
		return fmt.Errorf("data folder %s: %w", name, err)
	}
	return nil
}

// tempDirStore is a store whose local folder is removed when it closes.
type tempDirStore struct {
	storage.Store
	dir string
}

func (s *tempDirStore) Close() error {
	err := s.Store.Close()
	os.RemoveAll(s.dir)
	return err
}

// writeTable prints rows under a header in aligned columns, for a person
// at a terminal.
func writeTable(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}
