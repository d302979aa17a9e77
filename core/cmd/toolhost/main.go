// Command toolhost hosts Python tool groups for LLM agents: it checks tool
// group definitions, translates their parameter types into model APIs' tool
// schemas, and runs their tools. Run "toolhost help" for the commands.
package main

import (
	"os"

	"toolhost/core/cli"
)

func main() {
	os.Exit(cli.Main(&cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:]))
}
