package service

import (
	"crypto/tls"
	"net"
	"os"
	"strings"
	"testing"
)

func TestOneTimeMutualTLS(t *testing.T) {
	core, env, err := NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvTLS, env)
	plugin, err := PluginTLS()
	if err != nil || plugin == nil {
		t.Fatalf("PluginTLS: %v %v", plugin, err)
	}
	if v, ok := os.LookupEnv(EnvTLS); ok {
		t.Errorf("PluginTLS left %s in the environment (%d bytes)", EnvTLS, len(v))
	}
	other, otherEnv, _ := NewTLS()
	t.Setenv(EnvTLS, otherEnv)
	otherPlugin, _ := PluginTLS()
	tests := []struct {
		name           string
		server, client *tls.Config
		ok             bool
	}{
		{"core dials its plugin", plugin, core, true},
		{"plugin dials its core (the broker)", core, plugin, true},
		{"another core dials the plugin", plugin, other, false},
		{"the core dials another plugin", otherPlugin, core, false},
		{"a client without a certificate", plugin, &tls.Config{RootCAs: core.ClientCAs, ServerName: "localhost"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mutualHandshake(t, tt.server, tt.client)
			if (err == nil) != tt.ok {
				t.Errorf("handshake error = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// mutualHandshake is a handshake where both sides' verdicts count: TLS 1.3
// clients finish before the server has checked their certificate, so the
// server's error is waited for too.
func mutualHandshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		s := tls.Server(c, server)
		if err := s.Handshake(); err != nil {
			srvErr <- err
			return
		}
		_, err = s.Write([]byte("x"))
		srvErr <- err
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := tls.Client(raw, client)
	if err := c.Handshake(); err != nil {
		return err
	}
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err != nil {
		return err
	}
	return <-srvErr
}

func TestPluginTLSInput(t *testing.T) {
	_, env, _ := NewTLS()
	tests := []struct {
		name, env, err string
		nilConfig      bool
	}{
		{"absent", "", "", true},
		{"two blocks", env[:strings.LastIndex(env, "-----BEGIN CERTIFICATE-----")], "want 3 PEM blocks", false},
		{"garbage after", env + "garbage", "want 3 PEM blocks", false},
		{"not PEM", "hello", "want 3 PEM blocks", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvTLS, tt.env)
			cfg, err := PluginTLS()
			if tt.err == "" {
				if err != nil || (cfg == nil) != tt.nilConfig {
					t.Fatalf("PluginTLS = %v, %v", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
}
