package kubernetes

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/uiod/uiod/config"
)

// documents splits a manifest file into its YAML documents and decodes each strictly
// (unknown or misspelt fields, duplicate keys and wrong types are errors) into the API
// type its kind names.
func documents(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for i, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s document %d: %v", file, i, err)
		}
		var obj any
		switch meta.APIVersion + " " + meta.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 Pod":
			obj = &corev1.Pod{}
		case "apps/v1 DaemonSet":
			obj = &appsv1.DaemonSet{}
		default:
			t.Fatalf("%s document %d: unexpected %s %s", file, i, meta.APIVersion, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s document %d (%s): %v", file, i, meta.Kind, err)
		}
		out[meta.Kind] = obj
	}
	return out
}

// TestStrictDecodeFailsOnTypos: the decoding this package relies on refuses a misspelt
// field and a value of the wrong type (else every other test here proves nothing).
func TestStrictDecodeFailsOnTypos(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: a, imagee: x}]\n",
		"apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: a, ports: [{containerPort: many}]}]\n",
		"apiVersion: v1\nkind: Pod\nspec:\n  securityContext: {runAsUser: 1}\n  securityContext: {runAsUser: 2}\n",
	} {
		if err := yaml.UnmarshalStrict([]byte(doc), &corev1.Pod{}); err == nil {
			t.Errorf("decoded without error:\n%s", doc)
		}
	}
}

// TestVFPod: the dataplane pod asks the device plugin for two VFs, runs as a user other
// than root with every capability dropped but IPC_LOCK, probes /healthz and /readyz, and
// its uiod.yaml validates with the device plugin's variable set, each port on its VF.
func TestVFPod(t *testing.T) {
	objs := documents(t, "vf-pod.yaml")
	pod := objs["Pod"].(*corev1.Pod)
	cm := objs["ConfigMap"].(*corev1.ConfigMap)
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	const res = "intel.com/intel_sriov_vfio"
	req, lim := c.Resources.Requests[res], c.Resources.Limits[res]
	if req.Value() != 2 || lim.Value() != 2 {
		t.Errorf("%s: requests %v, limits %v, want 2 and 2", res, req, lim)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"IPC_LOCK"}) || sc.Privileged != nil ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v: want every capability dropped but IPC_LOCK, unprivileged", sc)
	}
	psc := pod.Spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod security context %+v: want a user other than root", psc)
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath: the dataplane pod takes nothing from the host but its VFs", v.Name)
		}
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("probes are not /healthz and /readyz")
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	env["PCIDEVICE_INTEL_COM_INTEL_SRIOV_VFIO"] = "0000:03:10.0,0000:03:10.2" // as the device plugin sets it
	cfg, err := config.Loader{Host: &host, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}.
		Read(strings.NewReader(cm.Data["uiod.yaml"]))
	if err != nil {
		t.Fatalf("uiod.yaml: %v", err)
	}
	if cfg.Ports[0].PCI != "0000:03:10.0" || cfg.Ports[1].PCI != "0000:03:10.2" || cfg.StateDir != "/run/uiod/state" {
		t.Errorf("ports on %s and %s, state_dir %s", cfg.Ports[0].PCI, cfg.Ports[1].PCI, cfg.StateDir)
	}
	if !mounted(c.VolumeMounts, "/etc/uiod") || !mounted(c.VolumeMounts, "/run/uiod") {
		t.Errorf("mounts %+v: want the configuration at /etc/uiod and a state directory under /run/uiod", c.VolumeMounts)
	}
}

// host is a machine with CPUs to validate against (the configuration names none).
var host = config.HostWithCPUs(2)

// TestNodeAgent: the node agent runs every uiod command with --root /host on the host's
// sysfs, procfs, /dev and /run/uiod, creates and binds the VFs before the pod runs and
// quiesces and unbinds them in its preStop hook.
func TestNodeAgent(t *testing.T) {
	objs := documents(t, "node-agent.yaml")
	ds := objs["DaemonSet"].(*appsv1.DaemonSet)
	cm := objs["ConfigMap"].(*corev1.ConfigMap)
	spec := ds.Spec.Template.Spec
	if len(spec.InitContainers) != 1 || len(spec.Containers) != 1 {
		t.Fatalf("%d init containers, %d containers", len(spec.InitContainers), len(spec.Containers))
	}
	script := strings.Join(spec.InitContainers[0].Args, "\n")
	stop := strings.Join(spec.Containers[0].Lifecycle.PreStop.Exec.Command, " ")
	for _, want := range []string{"uiod --root /host vf create", "uiod --root /host bind --driver vfio-pci"} {
		if !strings.Contains(script, want) {
			t.Errorf("init script lacks %q:\n%s", want, script)
		}
	}
	for _, want := range []string{"uiod --root /host quiesce", "uiod --root /host unbind --restore"} {
		if !strings.Contains(stop, want) {
			t.Errorf("preStop lacks %q: %s", want, stop)
		}
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		for _, p := range []string{"/host/sys", "/host/proc", "/host/dev", "/host/run/uiod"} {
			if !mounted(c.VolumeMounts, p) {
				t.Errorf("container %s does not mount %s", c.Name, p)
			}
		}
	}
	if ds.Spec.Selector == nil || ds.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != ds.Spec.Template.Labels["app.kubernetes.io/name"] {
		t.Error("the selector does not match the template's labels")
	}
	if n := strings.Fields(cm.Data["vfs"]); len(n) == 0 || cm.Data["pf"] == "" || cm.Data["numvfs"] != "2" {
		t.Errorf("ConfigMap data %v", cm.Data)
	}
}

func mounted(ms []corev1.VolumeMount, path string) bool {
	return slices.ContainsFunc(ms, func(m corev1.VolumeMount) bool { return m.MountPath == path })
}
