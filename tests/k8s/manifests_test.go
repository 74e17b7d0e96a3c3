// Package k8s checks the Kubernetes base in docker/k8s and its monitoring
// (docker/k8s/monitoring) without a cluster: it renders them with `kubectl
// kustomize` (or kustomize itself where there is no kubectl), decodes every
// object
// strictly into the Kubernetes API types (an unknown or misspelt field is
// an error) and checks the invariants the deployment relies on.
package k8s

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"sudoku-fcgi/cmd/contract"
	"sudoku-fcgi/fcgi/fcgiserver"
)

const (
	workerApp       = "sudoku-fcgi"
	edgeApp         = "sudoku-edge"
	prometheusApp   = "sudoku-prometheus"
	alertmanagerApp = "sudoku-alertmanager"
)

var (
	baseDir       = filepath.Join("..", "..", "docker", "k8s")
	monitoringDir = filepath.Join(baseDir, "monitoring")
)

// objects is a rendered kustomization, by kind.
type objects struct {
	namespaces  []corev1.Namespace
	deployments []appsv1.Deployment
	services    []corev1.Service
	pdbs        []policyv1.PodDisruptionBudget
	hpas        []autoscalingv2.HorizontalPodAutoscaler
	policies    []networkingv1.NetworkPolicy
}

// kustomizeVersion is the kustomize that renders the base where kubectl is
// missing (kubectl 1.32 embeds the same v5.5.0); .ci/run installs it.
const kustomizeVersion = "v5.5.0"

// render renders the base.
func render(t *testing.T) objects {
	t.Helper()
	return renderDir(t, baseDir)
}

// renderMonitoring renders the base and the monitoring beside it, as
// `kubectl apply -k` of both leaves them in the cluster.
func renderMonitoring(t *testing.T) objects {
	t.Helper()
	o, m := render(t), renderDir(t, monitoringDir)
	o.namespaces = append(o.namespaces, m.namespaces...)
	o.deployments = append(o.deployments, m.deployments...)
	o.services = append(o.services, m.services...)
	o.pdbs = append(o.pdbs, m.pdbs...)
	o.hpas = append(o.hpas, m.hpas...)
	o.policies = append(o.policies, m.policies...)
	return o
}

// renders are the base alone and the base with its monitoring, for the
// invariants that hold for both.
func renders(t *testing.T) map[string]objects {
	t.Helper()
	return map[string]objects{"base": render(t), "base+monitoring": renderMonitoring(t)}
}

// renderDir runs kubectl kustomize on base, else kustomize from PATH, else
// kustomize through `go run` from the module cache only (GOPROXY=off: a unit
// test never needs the network), and decodes every document. Without any of
// them it skips, saying why, unless CI is set.
func renderDir(t *testing.T, base string) objects {
	t.Helper()
	var cmd *exec.Cmd
	switch {
	case lookPath("kubectl"):
		cmd = exec.Command("kubectl", "kustomize", base)
	case lookPath("kustomize"):
		cmd = exec.Command("kustomize", "build", base)
	default:
		cmd = exec.Command("go", "run", "sigs.k8s.io/kustomize/kustomize/v5@"+kustomizeVersion, "build", base)
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && cmd.Args[0] == "go" && os.Getenv("CI") == "" {
		t.Skipf("no kubectl or kustomize on PATH, and kustomize %s is not in the module cache (GOPROXY=off: %v); install one to run this test (.ci/run does)", kustomizeVersion, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	objs, err := decode(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// decode splits a multi-document YAML stream and decodes each document into
// the API type of its kind, rejecting unknown kinds and unknown fields.
func decode(stream []byte) (objects, error) {
	var o objects
	kinds := map[string]func(doc string) error{
		"v1 Namespace":                           into(&o.namespaces),
		"apps/v1 Deployment":                     into(&o.deployments),
		"v1 Service":                             into(&o.services),
		"policy/v1 PodDisruptionBudget":          into(&o.pdbs),
		"autoscaling/v2 HorizontalPodAutoscaler": into(&o.hpas),
		"networking.k8s.io/v1 NetworkPolicy":     into(&o.policies),
	}
	for i, doc := range regexp.MustCompile(`(?m)^---$`).Split(string(stream), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return o, fmt.Errorf("document %d: %w", i, err)
		}
		add, ok := kinds[tm.APIVersion+" "+tm.Kind]
		if !ok {
			return o, fmt.Errorf("document %d: unexpected kind %q %q", i, tm.APIVersion, tm.Kind)
		}
		if err := add(doc); err != nil {
			return o, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
	}
	return o, nil
}

// into returns a function that decodes a document as the API server does,
// case-sensitively and failing on any unknown or duplicate field, and
// appends it to list.
func into[T any](list *[]T) func(doc string) error {
	return func(doc string) error {
		j, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return err
		}
		var v T
		strictErrs, err := kjson.UnmarshalStrict(j, &v)
		if err != nil {
			return err
		}
		if len(strictErrs) > 0 {
			return errors.Join(strictErrs...)
		}
		*list = append(*list, v)
		return nil
	}
}

func TestDecodeRejectsUnknownFieldsAndKinds(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt field": "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  clusterIp: None\n",
		"unknown kind":   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n",
		"old api":        "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: x\n",
	} {
		if _, err := decode([]byte(doc)); err == nil {
			t.Errorf("%s: decode(%q) = nil error, want one", name, doc)
		}
	}
}

func TestEveryKindIsThere(t *testing.T) {
	o := render(t)
	if len(o.namespaces) != 1 || len(o.deployments) != 2 || len(o.services) != 3 || len(o.pdbs) != 2 ||
		len(o.hpas) != 1 || len(o.policies) != 3 {
		t.Errorf("rendered %d namespaces, %d deployments, %d services, %d PDBs, %d HPAs, %d network policies; want 1, 2, 3, 2, 1, 3",
			len(o.namespaces), len(o.deployments), len(o.services), len(o.pdbs), len(o.hpas), len(o.policies))
	}
	for _, d := range o.deployments {
		if d.Namespace != o.namespaces[0].Name {
			t.Errorf("deployment %s in namespace %q, want %q", d.Name, d.Namespace, o.namespaces[0].Name)
		}
	}
}

func (o objects) deployment(t *testing.T, app string) appsv1.Deployment {
	t.Helper()
	for _, d := range o.deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/name"] == app {
			return d
		}
	}
	t.Fatalf("no deployment of %s", app)
	return appsv1.Deployment{}
}

func TestDeploymentsSelectTheirPods(t *testing.T) {
	for name, o := range renders(t) {
		t.Run(name, func(t *testing.T) { deploymentsSelectTheirPods(t, o) })
	}
}

func deploymentsSelectTheirPods(t *testing.T, o objects) {
	for _, d := range o.deployments {
		if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 || !matches(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("deployment %s: selector %v does not select its pod labels %v", d.Name, d.Spec.Selector, d.Spec.Template.Labels)
		}
		if r := d.Spec.Strategy.RollingUpdate; r == nil || r.MaxUnavailable == nil || r.MaxUnavailable.IntValue() != 0 {
			t.Errorf("deployment %s: rolling update may take a pod down before its successor is ready", d.Name)
		}
	}
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestEveryContainerIsLimitedAndLockedDown: the base's pods and the
// monitoring's alike.
func TestEveryContainerIsLimitedAndLockedDown(t *testing.T) {
	for name, o := range renders(t) {
		t.Run(name, func(t *testing.T) { lockedDown(t, o) })
	}
}

func lockedDown(t *testing.T, o objects) {
	for _, d := range o.deployments {
		pod := d.Spec.Template.Spec
		psc := pod.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("deployment %s: pod securityContext lacks runAsNonRoot: true", d.Name)
		}
		if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("deployment %s: pod lacks the RuntimeDefault seccomp profile", d.Name)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("deployment %s: mounts a service account token it never uses", d.Name)
		}
		for _, c := range pod.Containers {
			name := d.Name + "/" + c.Name
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				lim, okL := c.Resources.Limits[res]
				req, okR := c.Resources.Requests[res]
				if !okL || !okR || req.Cmp(lim) > 0 {
					t.Errorf("%s: %s request %v and limit %v: want both, request <= limit", name, res, req.String(), lim.String())
				}
			}
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Errorf("%s: no securityContext", name)
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Errorf("%s: root filesystem is writable", name)
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Errorf("%s: allows privilege escalation", name)
			case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
				t.Errorf("%s: capabilities %v, want drop [ALL] and no add", name, sc.Capabilities)
			case sc.RunAsUser != nil && *sc.RunAsUser == 0, psc != nil && psc.RunAsUser != nil && *psc.RunAsUser == 0:
				t.Errorf("%s: runs as uid 0", name)
			}
			if c.ReadinessProbe == nil || c.LivenessProbe == nil {
				t.Errorf("%s: readiness %v, liveness %v: want both", name, c.ReadinessProbe, c.LivenessProbe)
			}
		}
	}
}

// flagEnv builds a command and returns the environment twins its -help
// lists ("$NAME", or the older "env NAME"), so that a manifest cannot set a
// variable the binary ignores.
func flagEnv(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	build := exec.Command("go", "build", "-o", bin, "sudoku-fcgi/"+pkg)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	help, _ := exec.Command(bin, "-help").CombinedOutput()
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:\$|env )([A-Z][A-Z0-9_]+)`).FindAllStringSubmatch(string(help), -1) {
		names[m[1]] = true
	}
	if len(names) == 0 {
		t.Fatalf("%s -help lists no environment variable:\n%s", pkg, help)
	}
	return names
}

func env(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func TestEnvironmentNamesAreTheBinariesTwins(t *testing.T) {
	o := render(t)
	for app, pkg := range map[string]string{workerApp: "cmd/sudoku-fcgi", edgeApp: "cmd/sudoku-edge"} {
		known := flagEnv(t, pkg)
		c := o.deployment(t, app).Spec.Template.Spec.Containers[0]
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "GO") {
				continue // the Go runtime's own (GOMEMLIMIT)
			}
			if !known[e.Name] {
				t.Errorf("%s sets $%s, which %s -help does not list", app, e.Name, pkg)
			}
		}
	}
}

func port(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, p.StrVal)
	return 0
}

func listenPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	v, ok := env(c, name)
	if !ok {
		t.Fatalf("container %s does not set $%s", c.Name, name)
	}
	_, p, err := net.SplitHostPort(v)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("$%s=%q is not host:port", name, v)
	}
	return int32(n)
}

// duration is the duration c's $name sets, or def, the binary's default
// for it, when c does not set it.
func duration(t *testing.T, c corev1.Container, name string, def time.Duration) time.Duration {
	t.Helper()
	v, ok := env(c, name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("$%s=%q: %v", name, v, err)
	}
	return d
}

func TestWorkerProbesAndDrain(t *testing.T) {
	o := render(t)
	d := o.deployment(t, workerApp)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	fastcgi := listenPort(t, c, "SUDOKU_FCGI_LISTEN")
	internal := listenPort(t, c, "SUDOKU_FCGI_INTERNAL_LISTEN")
	if fastcgi == internal {
		t.Fatalf("FastCGI and internal listeners share port %d", fastcgi)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		want := map[string]string{"readiness": "/readyz", "liveness": "/healthz"}[name]
		if p == nil || p.HTTPGet == nil {
			t.Errorf("worker %s probe is not an HTTP GET: %+v", name, p)
			continue
		}
		if got := port(t, c, p.HTTPGet.Port); got != internal || p.HTTPGet.Path != want {
			t.Errorf("worker %s probe GETs %s on port %d, want %s on the internal port %d", name, p.HTTPGet.Path, got, want, internal)
		}
	}
	declared := map[int32]bool{}
	for _, cp := range c.Ports {
		declared[cp.ContainerPort] = true
	}
	if !declared[fastcgi] || !declared[internal] {
		t.Errorf("worker declares ports %v, want %d and %d", c.Ports, fastcgi, internal)
	}

	// preStop outlasts the edge's discovery interval; the grace period
	// outlasts preStop, the linger and the drain together.
	edge := o.deployment(t, edgeApp).Spec.Template.Spec.Containers[0]
	resolve := duration(t, edge, "SUDOKU_EDGE_RESOLVE_INTERVAL", contract.ResolveInterval)
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Fatalf("worker has no preStop sleep: %+v", c.Lifecycle)
	}
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	if preStop <= 2*resolve {
		t.Errorf("worker preStop sleeps %v, want more than two edge resolve intervals (%v)", preStop, 2*resolve)
	}
	need := preStop + duration(t, c, "SUDOKU_FCGI_DRAIN_LINGER", contract.DrainLinger) +
		duration(t, c, "SUDOKU_FCGI_DRAIN_TIMEOUT", fcgiserver.DefaultOptions().DrainTimeout)
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second <= need {
		t.Errorf("worker terminationGracePeriodSeconds %v, want above preStop + linger + drain = %v", pod.TerminationGracePeriodSeconds, need)
	}
}

func TestHeadlessServiceIsWhatTheEdgeResolves(t *testing.T) {
	o := render(t)
	workers := o.deployment(t, workerApp)
	wc := workers.Spec.Template.Spec.Containers[0]
	edge := o.deployment(t, edgeApp).Spec.Template.Spec.Containers[0]
	target, ok := env(edge, "SUDOKU_EDGE_WORKERS")
	if !ok {
		t.Fatal("edge does not set $SUDOKU_EDGE_WORKERS")
	}
	host, p, err := net.SplitHostPort(target)
	if err != nil {
		t.Fatalf("$SUDOKU_EDGE_WORKERS=%q: %v", target, err)
	}
	var svc *corev1.Service
	for i := range o.services {
		if o.services[i].Name == host {
			svc = &o.services[i]
		}
	}
	if svc == nil {
		t.Fatalf("edge resolves %q, but no Service has that name", host)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("service %s: clusterIP %q, want None (headless: DNS lists every worker)", svc.Name, svc.Spec.ClusterIP)
	}
	if !matches(svc.Spec.Selector, workers.Spec.Template.Labels) || len(svc.Spec.Selector) == 0 {
		t.Errorf("service %s selects %v, not the worker pods %v", svc.Name, svc.Spec.Selector, workers.Spec.Template.Labels)
	}
	fastcgi := listenPort(t, wc, "SUDOKU_FCGI_LISTEN")
	if len(svc.Spec.Ports) != 1 || strconv.Itoa(int(svc.Spec.Ports[0].Port)) != p || port(t, wc, svc.Spec.Ports[0].TargetPort) != fastcgi {
		t.Errorf("service %s ports %+v: want one, port %s, targeting the FastCGI port %d", svc.Name, svc.Spec.Ports, p, fastcgi)
	}
	if svc.Spec.PublishNotReadyAddresses {
		t.Errorf("service %s publishes workers that are not ready", svc.Name)
	}
}

// TestWorkerPortsStayInternal: the monitoring's policies add Prometheus
// and no one else.
func TestWorkerPortsStayInternal(t *testing.T) {
	for name, o := range renders(t) {
		t.Run(name, func(t *testing.T) { workerPortsStayInternal(t, o) })
	}
}

func workerPortsStayInternal(t *testing.T, o objects) {
	workers := o.deployment(t, workerApp)
	labels := workers.Spec.Template.Labels
	edgeLabels := o.deployment(t, edgeApp).Spec.Template.Labels
	for _, s := range o.services {
		if matches(s.Spec.Selector, labels) && (s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer || s.Spec.ClusterIP != corev1.ClusterIPNone) {
			t.Errorf("service %s (type %q, clusterIP %q) exposes the workers beyond DNS discovery", s.Name, s.Spec.Type, s.Spec.ClusterIP)
		}
	}
	for _, c := range workers.Spec.Template.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort != 0 {
				t.Errorf("worker port %s is bound on the node (hostPort %d)", cp.Name, cp.HostPort)
			}
		}
	}
	var denyAll, workerPolicy bool
	for _, np := range o.policies {
		sel := np.Spec.PodSelector.MatchLabels
		if len(sel) == 0 && len(np.Spec.PodSelector.MatchExpressions) == 0 && slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) && len(np.Spec.Ingress) == 0 {
			denyAll = true
		}
		if len(sel) == 0 || !matches(sel, labels) {
			continue
		}
		workerPolicy = true
		for i, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 || len(rule.Ports) == 0 {
				t.Errorf("policy %s ingress rule %d admits any peer or any port to the workers", np.Name, i)
			}
			for _, peer := range rule.From {
				if peer.IPBlock != nil {
					t.Errorf("policy %s ingress rule %d admits an IP block to the workers", np.Name, i)
				}
				for _, rp := range rule.Ports {
					if rp.Port != nil && port(t, workers.Spec.Template.Spec.Containers[0], *rp.Port) == listenPort(t, workers.Spec.Template.Spec.Containers[0], "SUDOKU_FCGI_LISTEN") &&
						(peer.PodSelector == nil || peer.NamespaceSelector != nil || !matches(peer.PodSelector.MatchLabels, edgeLabels)) {
						t.Errorf("policy %s admits %+v to the FastCGI port, want only the edge pods", np.Name, peer)
					}
					if rp.Port != nil && port(t, workers.Spec.Template.Spec.Containers[0], *rp.Port) == listenPort(t, workers.Spec.Template.Spec.Containers[0], "SUDOKU_FCGI_INTERNAL_LISTEN") && !o.prometheusOnly(peer) {
						t.Errorf("policy %s admits %+v to the internal port, want only Prometheus's pods", np.Name, peer)
					}
				}
			}
		}
	}
	if !denyAll || !workerPolicy {
		t.Errorf("default deny-ingress policy %v, worker policy %v: want both", denyAll, workerPolicy)
	}
}

// monitoringNamespace and prometheusLabels are where a cluster's own
// Prometheus runs: with the monitoring's Prometheus (docker/k8s/monitoring)
// the only peers admitted to the workers' internal port and the edge's
// metrics.
const monitoringNamespace = "monitoring"

var prometheusLabels = map[string]string{"app.kubernetes.io/name": "prometheus"}

// prometheusOnly reports whether peer admits Prometheus's pods and nothing
// else: those in the monitoring namespace (both selectors in one peer: the
// namespace and the pod must both match), or, where o holds the
// monitoring's Prometheus, its pods by their exact labels in their own
// namespace (a pod selector alone). Never an IP block.
func (o objects) prometheusOnly(peer networkingv1.NetworkPolicyPeer) bool {
	if peer.IPBlock != nil || peer.PodSelector == nil || len(peer.PodSelector.MatchExpressions) > 0 {
		return false
	}
	if peer.NamespaceSelector == nil {
		own, ok := o.prometheusPods()
		return ok && maps.Equal(peer.PodSelector.MatchLabels, own)
	}
	return len(peer.NamespaceSelector.MatchExpressions) == 0 &&
		maps.Equal(peer.NamespaceSelector.MatchLabels, map[string]string{"kubernetes.io/metadata.name": monitoringNamespace}) &&
		maps.Equal(peer.PodSelector.MatchLabels, prometheusLabels)
}

// prometheusPods returns the pod labels of the monitoring's Prometheus, if
// o holds it.
func (o objects) prometheusPods() (map[string]string, bool) {
	for _, d := range o.deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/name"] == prometheusApp {
			return d.Spec.Template.Labels, true
		}
	}
	return nil, false
}

// TestEdgeMetricsPortsAdmitOnlyPrometheus: the edge's own metrics port
// (-metrics-listen) is declared, the metrics Service carries it, and the
// policies admit it and the exporter's port from Prometheus's pods only,
// with the monitoring's policies too.
func TestEdgeMetricsPortsAdmitOnlyPrometheus(t *testing.T) {
	for name, o := range renders(t) {
		t.Run(name, func(t *testing.T) { edgeMetricsAdmitOnlyPrometheus(t, o) })
	}
}

func edgeMetricsAdmitOnlyPrometheus(t *testing.T, o objects) {
	edge := o.deployment(t, edgeApp)
	labels := edge.Spec.Template.Labels
	want := map[string]int32{}
	for _, c := range edge.Spec.Template.Spec.Containers {
		switch c.Name {
		case "nginx":
			n := listenPort(t, c, "SUDOKU_EDGE_METRICS_LISTEN")
			declared := false
			for _, cp := range c.Ports {
				if cp.ContainerPort == n {
					declared = true
					want[cp.Name] = n
				}
			}
			if !declared {
				t.Errorf("container nginx listens for metrics on %d (SUDOKU_EDGE_METRICS_LISTEN) but declares no such port", n)
			}
		case "exporter":
			want["metrics"] = port(t, c, intstr.FromString("metrics"))
		}
	}
	if len(want) != 2 {
		t.Fatalf("metrics ports found: %v, want the edge's and the exporter's", want)
	}
	for _, s := range o.services {
		if !matches(s.Spec.Selector, labels) || s.Name != "sudoku-edge-metrics" {
			continue
		}
		for name := range want {
			if !slices.ContainsFunc(s.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.TargetPort.StrVal == name }) {
				t.Errorf("service %s does not carry port %s", s.Name, name)
			}
		}
	}
	admitted := map[string]bool{}
	for _, np := range o.policies {
		if len(np.Spec.PodSelector.MatchLabels) == 0 || !matches(np.Spec.PodSelector.MatchLabels, labels) {
			continue
		}
		for i, rule := range np.Spec.Ingress {
			for name := range want {
				if !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.StrVal == name }) && len(rule.Ports) > 0 {
					continue
				}
				if len(rule.From) == 0 {
					t.Errorf("policy %s ingress rule %d admits anyone to %s", np.Name, i, name)
				}
				for _, peer := range rule.From {
					if !o.prometheusOnly(peer) {
						t.Errorf("policy %s ingress rule %d admits %+v to %s, want only Prometheus's pods", np.Name, i, peer, name)
					}
				}
				admitted[name] = true
			}
		}
	}
	for name := range want {
		if !admitted[name] {
			t.Errorf("no policy admits Prometheus to the edge's port %s", name)
		}
	}
}

func TestDisruptionBudgetsAndAutoscaler(t *testing.T) {
	o := render(t)
	for _, pdb := range o.pdbs {
		found := false
		for _, d := range o.deployments {
			if pdb.Spec.Selector != nil && matches(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
				found = true
				if pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.IntValue() >= int(*d.Spec.Replicas) {
					t.Errorf("PDB %s: minAvailable %v blocks every eviction of %d replicas", pdb.Name, pdb.Spec.MinAvailable, *d.Spec.Replicas)
				}
			}
		}
		if !found {
			t.Errorf("PDB %s selects no deployment's pods", pdb.Name)
		}
	}
	for _, app := range []string{workerApp, edgeApp} {
		d := o.deployment(t, app)
		covered := slices.ContainsFunc(o.pdbs, func(p policyv1.PodDisruptionBudget) bool {
			return p.Spec.Selector != nil && matches(p.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
		})
		if !covered {
			t.Errorf("deployment %s has no PodDisruptionBudget", d.Name)
		}
	}
	workers := o.deployment(t, workerApp)
	if len(o.hpas) != 1 {
		t.Fatalf("%d autoscalers, want 1", len(o.hpas))
	}
	h := o.hpas[0]
	if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != workers.Name {
		t.Errorf("autoscaler %s scales %v, want deployment %s", h.Name, h.Spec.ScaleTargetRef, workers.Name)
	}
	cpu := slices.ContainsFunc(h.Spec.Metrics, func(m autoscalingv2.MetricSpec) bool {
		return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU
	})
	if !cpu {
		t.Errorf("autoscaler %s does not scale on CPU: %+v", h.Name, h.Spec.Metrics)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
		t.Errorf("autoscaler %s replicas %v-%d: want at least 2, max >= min", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
}

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// TestPublicServiceKeepsClientAddresses: the Service that publishes the
// edge's HTTP port reaches it from outside the cluster without rewriting
// the client's source address (externalTrafficPolicy Local): with the
// default, Cluster, nginx would see a node's address for every client and
// the per-client limits would be one budget for all.
func TestPublicServiceKeepsClientAddresses(t *testing.T) {
	o := render(t)
	edge := o.deployment(t, edgeApp)
	public := 0
	for _, s := range o.services {
		if !matches(s.Spec.Selector, edge.Spec.Template.Labels) || !slices.ContainsFunc(s.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.TargetPort.StrVal == "http" }) {
			continue
		}
		public++
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer && s.Spec.Type != corev1.ServiceTypeNodePort {
			t.Errorf("service %s publishes nginx's HTTP port as type %q, want LoadBalancer or NodePort", s.Name, s.Spec.Type)
		}
		if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			t.Errorf("service %s: externalTrafficPolicy %q, want Local (the client's address reaches nginx)", s.Name, s.Spec.ExternalTrafficPolicy)
		}
	}
	if public != 1 {
		t.Errorf("%d services publish nginx's HTTP port, want 1", public)
	}
}

// TestMonitoringKinds: the monitoring decodes strictly on its own, adds
// Prometheus and Alertmanager with their Services and policies, and lands
// in the base's namespace without a namespace of its own.
func TestMonitoringKinds(t *testing.T) {
	m := renderDir(t, monitoringDir)
	if len(m.namespaces) != 0 || len(m.deployments) != 2 || len(m.services) != 4 || len(m.policies) != 4 || len(m.pdbs) != 0 || len(m.hpas) != 0 {
		t.Errorf("rendered %d namespaces, %d deployments, %d services, %d network policies, %d PDBs, %d HPAs; want 0, 2, 4, 4, 0, 0",
			len(m.namespaces), len(m.deployments), len(m.services), len(m.policies), len(m.pdbs), len(m.hpas))
	}
	ns := render(t).namespaces[0].Name
	for _, d := range m.deployments {
		if d.Namespace != ns {
			t.Errorf("deployment %s in namespace %q, want the base's %q", d.Name, d.Namespace, ns)
		}
	}
	for _, s := range m.services {
		if s.Namespace != ns {
			t.Errorf("service %s in namespace %q, want the base's %q", s.Name, s.Namespace, ns)
		}
	}
	for _, np := range m.policies {
		if np.Namespace != ns {
			t.Errorf("policy %s in namespace %q, want the base's %q", np.Name, np.Namespace, ns)
		}
	}
	for _, app := range []string{prometheusApp, alertmanagerApp} {
		renderMonitoring(t).deployment(t, app)
	}
}

// promConfig is the part of a Prometheus configuration the tests read.
type promConfig struct {
	Global struct {
		ScrapeInterval     string `json:"scrape_interval"`
		EvaluationInterval string `json:"evaluation_interval"`
	} `json:"global"`
	RuleFiles []string `json:"rule_files"`
	Alerting  struct {
		Alertmanagers []sdConfigs `json:"alertmanagers"`
	} `json:"alerting"`
	ScrapeConfigs []struct {
		JobName string `json:"job_name"`
		sdConfigs
	} `json:"scrape_configs"`
}

type sdConfigs struct {
	StaticConfigs []struct {
		Targets []string `json:"targets"`
	} `json:"static_configs"`
	DNSSDConfigs []struct {
		Names []string `json:"names"`
		Type  string   `json:"type"`
		Port  int32    `json:"port"`
	} `json:"dns_sd_configs"`
}

func readPromConfig(t *testing.T, name string) promConfig {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docker", "prometheus", name))
	if err != nil {
		t.Fatal(err)
	}
	var c promConfig
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

func (c promConfig) jobs() []string {
	var jobs []string
	for _, sc := range c.ScrapeConfigs {
		jobs = append(jobs, sc.JobName)
	}
	slices.Sort(jobs)
	return jobs
}

// TestPrometheusK8sIsTheOthersJobsAndRules: prometheus-k8s.yml has the jobs,
// intervals and rule files of the compose and Swarm configurations (the
// rules select jobs by name), and sends its alerts somewhere.
func TestPrometheusK8sIsTheOthersJobsAndRules(t *testing.T) {
	k := readPromConfig(t, "prometheus-k8s.yml")
	for _, name := range []string{"prometheus.yml", "prometheus-swarm.yml"} {
		c := readPromConfig(t, name)
		if k.Global != c.Global {
			t.Errorf("prometheus-k8s.yml global %+v, %s %+v", k.Global, name, c.Global)
		}
		if !slices.Equal(k.RuleFiles, c.RuleFiles) {
			t.Errorf("prometheus-k8s.yml rule_files %v, %s %v", k.RuleFiles, name, c.RuleFiles)
		}
		if !slices.Equal(k.jobs(), c.jobs()) {
			t.Errorf("prometheus-k8s.yml jobs %v, %s %v", k.jobs(), name, c.jobs())
		}
	}
	if len(k.Alerting.Alertmanagers) == 0 {
		t.Error("prometheus-k8s.yml sends its alerts nowhere")
	}
}

// scrapeTarget is a port Prometheus reaches: a job's, or the alerting's.
type scrapeTarget struct {
	job  string
	pods appsv1.Deployment
	port int32
}

// k8sTargets resolves each name of prometheus-k8s.yml to the Service of
// that name in o and the pods it selects, and checks on the way that
// the name stays in Prometheus's namespace, the Service lists each pod
// (headless) and carries the config's port to a port the pods declare.
func k8sTargets(t *testing.T, o objects) []scrapeTarget {
	t.Helper()
	c := readPromConfig(t, "prometheus-k8s.yml")
	type group struct {
		job string
		sd  sdConfigs
	}
	groups := []group{}
	for _, sc := range c.ScrapeConfigs {
		groups = append(groups, group{sc.JobName, sc.sdConfigs})
	}
	for _, am := range c.Alerting.Alertmanagers {
		groups = append(groups, group{"(alerting)", am})
	}
	var targets []scrapeTarget
	for _, g := range groups {
		if len(g.sd.StaticConfigs) > 0 || len(g.sd.DNSSDConfigs) == 0 {
			t.Errorf("%s: static targets %v, DNS %v: want DNS discovery only", g.job, g.sd.StaticConfigs, g.sd.DNSSDConfigs)
		}
		for _, sd := range g.sd.DNSSDConfigs {
			if sd.Type != "A" {
				t.Errorf("%s: DNS type %q, want A (the pods' addresses, the port from the config)", g.job, sd.Type)
			}
			for _, name := range sd.Names {
				if strings.Contains(name, ".") {
					t.Errorf("%s: %q: want a Service's bare name, resolved in Prometheus's own namespace", g.job, name)
				}
				i := slices.IndexFunc(o.services, func(s corev1.Service) bool { return s.Name == name })
				if i < 0 {
					t.Errorf("%s: no Service %q", g.job, name)
					continue
				}
				s := o.services[i]
				if s.Spec.ClusterIP != corev1.ClusterIPNone {
					t.Errorf("%s: service %s has clusterIP %q: want None, an address per pod", g.job, s.Name, s.Spec.ClusterIP)
				}
				var selected []appsv1.Deployment
				for _, d := range o.deployments {
					if len(s.Spec.Selector) > 0 && matches(s.Spec.Selector, d.Spec.Template.Labels) {
						selected = append(selected, d)
					}
				}
				if len(selected) != 1 {
					t.Errorf("%s: service %s selects %d deployments' pods, want 1", g.job, s.Name, len(selected))
					continue
				}
				d := selected[0]
				carried := slices.ContainsFunc(s.Spec.Ports, func(sp corev1.ServicePort) bool {
					n, ok := podPort(d.Spec.Template.Spec, sp.TargetPort)
					return ok && n == sd.Port && sp.Port == sd.Port
				})
				if !carried {
					t.Errorf("%s: service %s has no port %d to a port of %s's pods: %+v", g.job, s.Name, sd.Port, d.Name, s.Spec.Ports)
				}
				// Alerts go only to a ready Alertmanager; the one Service
				// serves its job too.
				if d.Spec.Template.Labels["app.kubernetes.io/name"] != alertmanagerApp && !s.Spec.PublishNotReadyAddresses {
					t.Errorf("%s: service %s lists only ready pods: a pod failing its probes drops out instead of showing down", g.job, s.Name)
				}
				targets = append(targets, scrapeTarget{g.job, d, sd.Port})
			}
		}
	}
	return targets
}

// podPort resolves a port by name or number against every container of
// pod, as Services and NetworkPolicies do.
func podPort(pod corev1.PodSpec, p intstr.IntOrString) (int32, bool) {
	for _, c := range pod.Containers {
		for _, cp := range c.Ports {
			if (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) || (p.Type == intstr.String && cp.Name == p.StrVal) {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// TestPrometheusK8sScrapesThePods: each job of prometheus-k8s.yml reaches
// the pods and the port the manifests give it: the workers' internal
// listener, sudoku-edge's metrics listener, the exporter's port, and
// Alertmanager's for the job and for the alerts.
func TestPrometheusK8sScrapesThePods(t *testing.T) {
	o := renderMonitoring(t)
	workers, edge := o.deployment(t, workerApp), o.deployment(t, edgeApp)
	am := o.deployment(t, alertmanagerApp)
	var nginxC, exporterC corev1.Container
	for _, c := range edge.Spec.Template.Spec.Containers {
		switch c.Name {
		case "nginx":
			nginxC = c
		case "exporter":
			exporterC = c
		}
	}
	amC := am.Spec.Template.Spec.Containers[0]
	if amC.ReadinessProbe == nil || amC.ReadinessProbe.HTTPGet == nil {
		t.Fatalf("alertmanager has no HTTP readiness probe: %+v", amC.ReadinessProbe)
	}
	amPort := port(t, amC, amC.ReadinessProbe.HTTPGet.Port)
	want := map[string]scrapeTarget{
		"sudoku-workers": {pods: workers, port: listenPort(t, workers.Spec.Template.Spec.Containers[0], "SUDOKU_FCGI_INTERNAL_LISTEN")},
		"sudoku-edge":    {pods: edge, port: listenPort(t, nginxC, "SUDOKU_EDGE_METRICS_LISTEN")},
		"nginx":          {pods: edge, port: port(t, exporterC, intstr.FromString("metrics"))},
		"alertmanager":   {pods: am, port: amPort},
		"(alerting)":     {pods: am, port: amPort},
	}
	got := map[string]bool{}
	for _, tg := range k8sTargets(t, o) {
		w, ok := want[tg.job]
		if !ok {
			t.Errorf("job %s: not one the test knows", tg.job)
			continue
		}
		got[tg.job] = true
		if tg.pods.Name != w.pods.Name || tg.port != w.port {
			t.Errorf("job %s reaches %s:%d, want %s:%d", tg.job, tg.pods.Name, tg.port, w.pods.Name, w.port)
		}
	}
	for job := range want {
		if !got[job] {
			t.Errorf("prometheus-k8s.yml reaches nothing for %s", job)
		}
	}
}

// TestPrometheusMayReachWhatItScrapes: for every port prometheus-k8s.yml
// reaches, a policy on the target's pods admits Prometheus's pods to it
// (the base denies all ingress), and Prometheus's own egress policy lets
// it out to that port and to the DNS that finds the targets; Alertmanager
// admits Prometheus and no one else.
func TestPrometheusMayReachWhatItScrapes(t *testing.T) {
	o := renderMonitoring(t)
	prom := o.deployment(t, prometheusApp)
	promLabels := prom.Spec.Template.Labels
	ns := prom.Namespace
	// samePods reports whether peer, in a policy of namespace ns, takes in
	// the pods with labels in ns.
	samePods := func(peer networkingv1.NetworkPolicyPeer, labels map[string]string) bool {
		if peer.IPBlock != nil || peer.PodSelector == nil || len(peer.PodSelector.MatchExpressions) > 0 || !matches(peer.PodSelector.MatchLabels, labels) {
			return false
		}
		return peer.NamespaceSelector == nil ||
			(len(peer.NamespaceSelector.MatchExpressions) == 0 && matches(peer.NamespaceSelector.MatchLabels, map[string]string{"kubernetes.io/metadata.name": ns}))
	}
	// portAdmitted reports whether ports (of a rule) admit TCP n on pod.
	portAdmitted := func(ports []networkingv1.NetworkPolicyPort, pod corev1.PodSpec, n int32) bool {
		if len(ports) == 0 {
			return true
		}
		return slices.ContainsFunc(ports, func(p networkingv1.NetworkPolicyPort) bool {
			if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
				return false
			}
			if p.Port == nil {
				return true
			}
			got, ok := podPort(pod, *p.Port)
			return ok && got == n
		})
	}
	var egressPolicies []networkingv1.NetworkPolicy
	for _, np := range o.policies {
		if matches(np.Spec.PodSelector.MatchLabels, promLabels) && slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			egressPolicies = append(egressPolicies, np)
		}
	}
	if len(egressPolicies) == 0 {
		t.Error("no policy limits Prometheus's egress")
	}
	targets := k8sTargets(t, o)
	if len(targets) == 0 {
		t.Fatal("prometheus-k8s.yml reaches nothing")
	}
	for _, tg := range targets {
		labels, pod := tg.pods.Spec.Template.Labels, tg.pods.Spec.Template.Spec
		in := slices.ContainsFunc(o.policies, func(np networkingv1.NetworkPolicy) bool {
			return len(np.Spec.PodSelector.MatchLabels) > 0 && matches(np.Spec.PodSelector.MatchLabels, labels) &&
				slices.ContainsFunc(np.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
					return portAdmitted(r.Ports, pod, tg.port) && slices.ContainsFunc(r.From, func(p networkingv1.NetworkPolicyPeer) bool { return samePods(p, promLabels) })
				})
		})
		if !in {
			t.Errorf("%s: no policy admits Prometheus's pods to %s's port %d", tg.job, tg.pods.Name, tg.port)
		}
		for _, np := range egressPolicies {
			out := slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
				return portAdmitted(r.Ports, pod, tg.port) && slices.ContainsFunc(r.To, func(p networkingv1.NetworkPolicyPeer) bool { return samePods(p, labels) })
			})
			if !out {
				t.Errorf("%s: policy %s keeps Prometheus from %s's port %d", tg.job, np.Name, tg.pods.Name, tg.port)
			}
		}
	}
	for _, np := range egressPolicies {
		dns := slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool {
				return p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP && p.Port != nil && p.Port.IntValue() == 53
			})
		})
		if !dns {
			t.Errorf("policy %s keeps Prometheus from DNS (UDP 53), which finds its targets", np.Name)
		}
	}
	am := o.deployment(t, alertmanagerApp).Spec.Template.Labels
	for _, np := range o.policies {
		if len(np.Spec.PodSelector.MatchLabels) == 0 || !matches(np.Spec.PodSelector.MatchLabels, am) {
			continue
		}
		for i, r := range np.Spec.Ingress {
			if len(r.From) == 0 || !o.prometheusOnly(r.From[0]) || slices.ContainsFunc(r.From, func(p networkingv1.NetworkPolicyPeer) bool { return !o.prometheusOnly(p) }) {
				t.Errorf("policy %s ingress rule %d admits %+v to Alertmanager, want only Prometheus's pods", np.Name, i, r.From)
			}
		}
	}
}

// TestEdgesAndWorkersSpreadOverNodes: two or more edges, which know their
// number (sudoku-edge checks TLS against it), and edges and workers each
// spread over the nodes by their own labels.
func TestEdgesAndWorkersSpreadOverNodes(t *testing.T) {
	o := render(t)
	edge := o.deployment(t, edgeApp)
	if r := edge.Spec.Replicas; r == nil || *r < 2 {
		t.Errorf("edge replicas %v, want 2 or more: one node would hold the only edge", r)
	} else if got := envValue(edge.Spec.Template.Spec.Containers, "SUDOKU_EDGE_REPLICAS"); got != strconv.Itoa(int(*r)) {
		t.Errorf("edge SUDOKU_EDGE_REPLICAS = %q, want spec.replicas %d", got, *r)
	}
	for _, app := range []string{edgeApp, workerApp} {
		d := o.deployment(t, app)
		spread := slices.ContainsFunc(d.Spec.Template.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
			return c.TopologyKey == "kubernetes.io/hostname" && c.MaxSkew == 1 && c.LabelSelector != nil &&
				matches(c.LabelSelector.MatchLabels, d.Spec.Template.Labels)
		})
		if !spread {
			t.Errorf("%s: no topology spread over kubernetes.io/hostname selecting its own pods", app)
		}
	}
}

// envValue is the value of the environment variable name in the first
// container that sets it.
func envValue(containers []corev1.Container, name string) string {
	for _, c := range containers {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}
