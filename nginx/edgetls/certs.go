package edgetls

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx/proc"
)

// certOptions configures a certManager.
type certOptions struct {
	Domains      []string       // one certificate per name
	Email        string         // ACME account contact; may be empty
	CA           string         // ACME directory URL
	TrustedRoots *x509.CertPool // for the CA's own TLS; nil means the system roots

	// StoragePath is certmagic's FileStorage: accounts, keys and
	// certificates. Put it on a volume so that restarts do not re-issue.
	StoragePath string
	// ExportDir receives the pairs nginx reads: each export is a new
	// version directory and ExportDir/live is a symlink swapped atomically.
	ExportDir string
	// ChallengePort is the port of the permanent HTTP-01 responder that
	// serves HTTPChallengeHandler; certmagic then never opens a listener of
	// its own for a challenge.
	ChallengePort int

	// Failures, when set, counts the certificate orders and renewals that
	// failed (certmagic's cert_failed event).
	Failures prometheus.Counter
}

// certManager keeps one certificate per domain with certmagic (ACME,
// HTTP-01 only) and hands every new pair out as a proc.Change for nginx; it
// never checks or reloads nginx itself. Due tells when to ask for one.
type certManager struct {
	opts   certOptions
	log    zerolog.Logger
	cache  *certmagic.Cache
	cfg    *certmagic.Config
	issuer *certmagic.ACMEIssuer

	kick     chan struct{}
	stopOnce sync.Once
}

// newCertManager configures certmagic. It does not touch the network.
func newCertManager(opts certOptions, log zerolog.Logger) (*certManager, error) {
	if len(opts.Domains) == 0 {
		return nil, errors.New("nginx: no domain to manage")
	}
	if opts.CA == "" || opts.StoragePath == "" || opts.ExportDir == "" || opts.ChallengePort == 0 {
		return nil, errors.New("nginx: CertOptions needs CA, StoragePath, ExportDir and ChallengePort")
	}
	m := &certManager{opts: opts, log: log, kick: make(chan struct{}, 1)}
	zl := newZapLogger(log.With().Str("component", "certmagic").Logger())
	m.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert: func(certmagic.Certificate) (*certmagic.Config, error) { return m.cfg, nil },
		Logger:           zl,
	})
	m.cfg = certmagic.New(m.cache, certmagic.Config{
		Storage: &certmagic.FileStorage{Path: opts.StoragePath},
		Logger:  zl,
		OnEvent: m.onEvent,
		// nginx serves the certificates; Go never answers a handshake, so
		// fetching OCSP staples would only reach out for nothing.
		OCSP: certmagic.OCSPConfig{DisableStapling: true},
	})
	m.issuer = certmagic.NewACMEIssuer(m.cfg, certmagic.ACMEIssuer{
		CA:                      opts.CA,
		TrustedRoots:            opts.TrustedRoots,
		Email:                   opts.Email,
		Agreed:                  true,
		DisableTLSALPNChallenge: true, // nginx owns the TLS port
		AltHTTPPort:             opts.ChallengePort,
		Logger:                  zl,
	})
	m.cfg.Issuers = []certmagic.Issuer{m.issuer}
	return m, nil
}

// onEvent runs synchronously inside certmagic: it only records that an
// export is due.
func (m *certManager) onEvent(ctx context.Context, event string, data map[string]any) error {
	switch event {
	case "cert_obtained", "cached_managed_cert":
		m.log.Info().Str("event", event).Interface("identifier", data["identifier"]).
			Interface("renewal", data["renewal"]).Msg("certificate event")
		select {
		case m.kick <- struct{}{}:
		default:
		}
	case "cert_failed":
		m.log.Error().Str("event", event).Interface("identifier", data["identifier"]).
			Interface("error", fmt.Sprint(data["error"])).Msg("certificate event")
		if m.opts.Failures != nil {
			m.opts.Failures.Inc()
		}
	}
	return nil
}

// HTTPChallengeHandler answers ACME HTTP-01 challenges and passes every
// other request to next.
func (m *certManager) HTTPChallengeHandler(next http.Handler) http.Handler {
	return m.issuer.HTTPChallengeHandler(next)
}

// Due receives a value when a certificate was obtained or loaded: the
// pairs in storage may differ from the exported ones (see Pairs).
func (m *certManager) Due() <-chan struct{} { return m.kick }

// Prepare makes sure a pair exists for every domain before nginx starts:
// the certificate from storage when there is one, else the one exported
// earlier, else a self-signed placeholder. It writes them without checking
// nginx, which is not running yet, and returns what it wrote.
func (m *certManager) Prepare(ctx context.Context) (*pairsChange, error) {
	ch, err := m.pairs(ctx, true)
	if err != nil {
		return nil, err
	}
	if _, _, err := ch.Stage(); err != nil {
		return nil, err
	}
	m.Exported(ch)
	return ch, nil
}

// Pairs returns the pairs from storage as a proc.Change that exports them for
// nginx when they differ from the exported ones. A pair missing from
// storage keeps what is exported (the placeholder at first). Call Exported
// once nginx has accepted it.
func (m *certManager) Pairs(ctx context.Context) (*pairsChange, error) {
	return m.pairs(ctx, false)
}

// Exported prunes the version directories that ch made old.
func (m *certManager) Exported(ch *pairsChange) { m.prune(ch.current()) }

// Run starts certmagic's management of the certificates: it obtains and
// renews in the background (nginx must be running, it carries HTTP-01)
// until Stop, and sends on Due after each certificate it obtains.
func (m *certManager) Run(ctx context.Context) error {
	if err := m.cfg.ManageAsync(ctx, m.opts.Domains); err != nil {
		return fmt.Errorf("managing certificates: %w", err)
	}
	return nil
}

// Renew renews name now, even when it is not due (force). Tests use it:
// Pebble's certificates last five years.
func (m *certManager) Renew(ctx context.Context, name string, force bool) error {
	return m.cfg.RenewCertSync(ctx, name, force)
}

// Stop stops certmagic's maintenance goroutines and removes its locks.
// It is safe to call more than once.
func (m *certManager) Stop() {
	m.stopOnce.Do(func() {
		m.cache.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		certmagic.CleanUpOwnLocks(ctx, m.cfg.Logger)
	})
}

type pair struct {
	name      string
	cert, key []byte
	source    string // storage, exported, placeholder
	serial    string
	notAfter  time.Time
	// placeholder marks the self-signed pair from selfSigned, also when it
	// is read back from the export directory after a restart.
	placeholder bool
}

// placeholderOrg is the Organization of the self-signed placeholder.
const placeholderOrg = "sudoku-edge placeholder"

// pairsChange gathers the pair for each domain. With placeholder set, a
// domain with neither a stored nor an exported pair gets a self-signed one.
func (m *certManager) pairs(ctx context.Context, placeholder bool) (*pairsChange, error) {
	ch := &pairsChange{dir: m.opts.ExportDir}
	for _, d := range m.opts.Domains {
		p, err := m.storedPair(ctx, d)
		if err != nil {
			m.log.Warn().Err(err).Str("domain", d).Msg("stored certificate unusable")
		}
		if p == nil {
			p = m.exportedPair(d)
		}
		if p == nil {
			if !placeholder {
				return nil, fmt.Errorf("no certificate for %s in storage or exported", d)
			}
			if p, err = selfSigned(d); err != nil {
				return nil, err
			}
			m.log.Warn().Str("domain", d).Msg("no certificate yet; nginx starts with a self-signed placeholder")
		}
		ch.pairs = append(ch.pairs, *p)
	}
	return ch, nil
}

func (m *certManager) storedPair(ctx context.Context, d string) (*pair, error) {
	ik := m.issuer.IssuerKey()
	cert, err := m.cfg.Storage.Load(ctx, certmagic.StorageKeys.SiteCert(ik, d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	key, err := m.cfg.Storage.Load(ctx, certmagic.StorageKeys.SitePrivateKey(ik, d))
	if err != nil {
		return nil, err
	}
	return newPair(d, cert, key, "storage")
}

func (m *certManager) exportedPair(d string) *pair {
	live := filepath.Join(m.opts.ExportDir, "live")
	cert, err1 := os.ReadFile(filepath.Join(live, d+".crt"))
	key, err2 := os.ReadFile(filepath.Join(live, d+".key"))
	if err1 != nil || err2 != nil {
		return nil
	}
	p, err := newPair(d, cert, key, "exported")
	if err != nil {
		m.log.Warn().Err(err).Str("domain", d).Msg("exported certificate unusable")
		return nil
	}
	return p
}

// newPair checks that cert and key belong together and cover name.
func newPair(name string, cert, key []byte, source string) (*pair, error) {
	tc, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", name, err)
	}
	leaf, err := x509.ParseCertificate(tc.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", name, err)
	}
	if err := leaf.VerifyHostname(name); err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", name, err)
	}
	return &pair{name: name, cert: cert, key: key, source: source,
		serial: leaf.SerialNumber.Text(16), notAfter: leaf.NotAfter,
		placeholder: bytes.Equal(leaf.RawIssuer, leaf.RawSubject) && slices.Contains(leaf.Subject.Organization, placeholderOrg)}, nil
}

// selfSigned makes a placeholder pair so that nginx can start before the
// first certificate is issued. Clients will not trust it.
func selfSigned(name string) (*pair, error) { return selfSignedBy(name, placeholderOrg) }

// selfSignedBy makes a self-signed pair for name whose subject's
// Organization is org.
func selfSignedBy(name, org string) (*pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{org}},
		DNSNames:     []string{name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(90 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating placeholder certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	source := "placeholder"
	if org != placeholderOrg {
		source = "self-signed"
	}
	return newPair(name, cert, keyPEM, source)
}

// pairsChange is a proc.Change that writes all pairs into a new version
// directory and swaps the live symlink to it, so nginx never sees a
// certificate with the wrong key.
type pairsChange struct {
	dir   string
	pairs []pair
	mu    sync.Mutex
	live  string // version directory live points to after Stage
}

func (c *pairsChange) String() string { return filepath.Join(c.dir, "live") }

func (c *pairsChange) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

func (c *pairsChange) Stage() (func() error, bool, error) {
	live := filepath.Join(c.dir, "live")
	oldTarget, _ := os.Readlink(live)
	c.mu.Lock()
	c.live = oldTarget
	c.mu.Unlock()
	same := oldTarget != ""
	for _, p := range c.pairs {
		cert, err1 := os.ReadFile(filepath.Join(live, p.name+".crt"))
		key, err2 := os.ReadFile(filepath.Join(live, p.name+".key"))
		if err1 != nil || err2 != nil || !bytes.Equal(cert, p.cert) || !bytes.Equal(key, p.key) {
			same = false
			break
		}
	}
	if same {
		return nil, false, nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, false, err
	}
	version := "v" + strconv.FormatInt(time.Now().UnixNano(), 10)
	vdir := filepath.Join(c.dir, version)
	if err := os.Mkdir(vdir, 0o755); err != nil {
		return nil, false, err
	}
	for _, p := range c.pairs {
		if err := proc.WriteFileAtomic(filepath.Join(vdir, p.name+".crt"), p.cert, 0o644); err != nil {
			return nil, false, err
		}
		if err := proc.WriteFileAtomic(filepath.Join(vdir, p.name+".key"), p.key, 0o600); err != nil {
			return nil, false, err
		}
	}
	if err := swapSymlink(live, version); err != nil {
		os.RemoveAll(vdir)
		return nil, false, err
	}
	c.mu.Lock()
	c.live = version
	c.mu.Unlock()
	revert := func() error {
		c.mu.Lock()
		c.live = oldTarget
		c.mu.Unlock()
		var err error
		if oldTarget == "" {
			err = os.Remove(live)
		} else {
			err = swapSymlink(live, oldTarget)
		}
		return errors.Join(err, os.RemoveAll(vdir))
	}
	return revert, true, nil
}

// swapSymlink points link at target atomically: a new symlink renamed over
// the old one.
func swapSymlink(link, target string) error {
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// prune removes version directories other than keep and the newest other
// one (a reload still in progress may read it).
func (m *certManager) prune(keep string) {
	entries, err := os.ReadDir(m.opts.ExportDir)
	if err != nil {
		return
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "v") && e.Name() != keep {
			versions = append(versions, e.Name())
		}
	}
	slices.Sort(versions) // same length names: v + 19 digits until 2286
	if len(versions) > 1 {
		for _, v := range versions[:len(versions)-1] {
			if err := os.RemoveAll(filepath.Join(m.opts.ExportDir, v)); err != nil {
				m.log.Warn().Err(err).Str("dir", v).Msg("removing an old certificate version")
			}
		}
	}
}
