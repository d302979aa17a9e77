package service

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"
)

// EnvTLS carries, from the core to its plugin process, the plugin's
// one-time certificate and key and the core's certificate (PEM). Its name
// starts with PLUGIN_ because the sandbox's launcher hands go-plugin's
// variables, and only those, on to the plugin process.
const EnvTLS = "PLUGIN_TOOLHOST_TLS"

// NewTLS makes the mutual TLS of one plugin process: two one-time Ed25519
// certificates, the core's and the plugin's, each trusting only the other.
// It returns the core's configuration and the value of EnvTLS for the
// plugin process.
//
// It replaces go-plugin's AutoMTLS, which does the same with P-521 keys:
// a process's first P-521 key costs about 12 ms of precomputation, and the
// core and the plugin process each make one on the way to every cold
// start (docs/decisions.md); Ed25519 keys and signatures take
// microseconds.
func NewTLS() (*tls.Config, string, error) {
	coreCert, coreKey, err := oneTimeCert()
	if err != nil {
		return nil, "", err
	}
	plugCert, plugKey, err := oneTimeCert()
	if err != nil {
		return nil, "", err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(plugKey)
	if err != nil {
		return nil, "", err
	}
	env := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: plugCert})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: coreCert}))
	cfg, err := mutualTLS(coreCert, coreKey, plugCert)
	return cfg, env, err
}

// PluginTLS is the plugin process's go-plugin TLSProvider: the
// configuration NewTLS made for it, read from EnvTLS (which it removes).
// Without the variable it returns nil, and go-plugin falls back to its
// own negotiation.
func PluginTLS() (*tls.Config, error) {
	data := os.Getenv(EnvTLS)
	os.Unsetenv(EnvTLS)
	if data == "" {
		return nil, nil
	}
	var blocks [][]byte
	rest := []byte(data)
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		blocks = append(blocks, b.Bytes)
	}
	if len(blocks) != 3 || strings.TrimSpace(string(rest)) != "" {
		return nil, fmt.Errorf("%s: want 3 PEM blocks, got %d", EnvTLS, len(blocks))
	}
	key, err := x509.ParsePKCS8PrivateKey(blocks[1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvTLS, err)
	}
	ed, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New(EnvTLS + ": the key is not an Ed25519 key")
	}
	return mutualTLS(blocks[0], ed, blocks[2])
}

// mutualTLS is one side's configuration: its own certificate, and the
// peer's as the only authority, whichever side dials (the broker's
// connections for toolhost.call_tool go the other way).
func mutualTLS(own []byte, key ed25519.PrivateKey, peer []byte) (*tls.Config, error) {
	peerCert, err := x509.ParseCertificate(peer)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(peerCert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{own}, PrivateKey: key}},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
		ServerName:   "localhost",
	}, nil
}

// oneTimeCert makes a self-signed Ed25519 certificate for "localhost",
// usable as client and server.
func oneTimeCert() ([]byte, ed25519.PrivateKey, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"toolhost"}},
		DNSNames:              []string{"localhost"},
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SerialNumber:          sn,
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	return der, key, err
}
