//go:build e2e && linux

package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The benchmark (`make bench`) at a smoke size, so that it cannot rot: upstream, kcm and
// kcm-groups (kcm as three replicas with --controller-groups=auto, issue 40) on their own fresh
// clusters, the full scenario, the tables and the JSON.
var _ = Describe("The benchmark", func() {
	It("measures kcm, kcm's three replicas with controller groups and upstream kube-controller-manager side by side at a smoke size", func(ctx SpecContext) {
		upstream := envOr("UPSTREAM_KCM", filepath.Join(root, "bin", "k8s", "1.37.1", "kube-controller-manager"))
		Expect(upstream).To(BeAnExistingFile(), "`make e2e` builds it")
		bench := filepath.Join(logDir, "bench")
		build(bench, "github.com/kcm/kcm/test/bench")
		kcmBin := envOr("KCM_BINARY", filepath.Join(logDir, "kcm"))
		out := filepath.Join(logDir, "bench-result.json")

		cmd := exec.CommandContext(ctx, bench,
			"-deployments=6", "-replicas=2", "-nodes=2", "-quiet=2s", "-settle=1s", "-managers=upstream,kcm,kcm-groups",
			"-kcm="+kcmBin, "-upstream="+upstream, "-kwok="+kwokBinary,
			"-assets="+filepath.Dir(kubectl),
			"-out="+out, "-logs="+filepath.Join(logDir, "bench-logs"))
		cmd.Dir = root
		output, err := cmd.CombinedOutput()
		GinkgoWriter.Printf("%s\n", output)
		Expect(err).NotTo(HaveOccurred(), "bench:\n%s", output)
		Expect(string(output)).To(ContainSubstring("kcm/upstream"), "the side-by-side table")
		Expect(string(output)).To(ContainSubstring("issue 40's goals"), "kcm-groups against the single kcm leader")

		data, err := os.ReadFile(out)
		Expect(err).NotTo(HaveOccurred())
		var res struct {
			Managers []struct {
				Name   string
				Phases []struct {
					Name            string
					WallSeconds     float64
					Requests        float64 `json:"apiRequests"`
					SettledRSSBytes int64
					CPUSeconds      float64
					PeakRSSBytes    int64
					Series          []struct {
						Seconds float64 `json:"s"`
					}
					Replicas []struct {
						Name         string
						Requests     float64 `json:"apiRequests"`
						CPUSeconds   float64
						PeakRSSBytes int64
						Informers    []string
						Groups       []string
					}
				}
				Quiet        *struct{ WallSeconds float64 }
				Requests     float64 `json:"apiRequests"`
				CPUSeconds   float64
				PeakRSSBytes int64
			}
			Ratio          map[string]float64 `json:"ratioKCMToUpstream"`
			GroupsGoals    []struct{ Name string }
			APIServerLimit struct{ Pods int }
		}
		Expect(json.Unmarshal(data, &res)).To(Succeed())
		Expect(res.Managers).To(HaveLen(3))
		Expect(strings.TrimSuffix(out, ".json")+".svg").To(BeAnExistingFile(), "the chart beside the JSON")
		for _, m := range res.Managers {
			Expect(m.Phases).To(HaveLen(3), m.Name)
			for _, p := range m.Phases {
				Expect(p.WallSeconds).To(BeNumerically(">", 0), "%s %s", m.Name, p.Name)
				Expect(p.Requests).To(BeNumerically(">", 0), "%s %s", m.Name, p.Name)
				Expect(p.SettledRSSBytes).To(BeNumerically(">", 1<<20), "%s %s", m.Name, p.Name)
				Expect(p.Series).NotTo(BeEmpty(), "%s %s: the samples the chart draws", m.Name, p.Name)
				if m.Name != "kcm-groups" {
					Expect(p.Replicas).To(BeEmpty(), "%s %s: one process", m.Name, p.Name)
					continue
				}
				// Each replica's numbers, of which the phase's are the sum (requests, CPU)
				// and the largest (peak RSS); each holds informers and leads its own groups.
				Expect(p.Replicas).To(HaveLen(3), "%s %s", m.Name, p.Name)
				var requests, cpu float64
				var peak int64
				var led []string
				for _, r := range p.Replicas {
					Expect(r.PeakRSSBytes).To(BeNumerically(">", 1<<20), "%s %s %s", m.Name, p.Name, r.Name)
					Expect(r.Informers).NotTo(BeEmpty(), "%s %s %s", m.Name, p.Name, r.Name)
					Expect(r.Groups).NotTo(BeEmpty(), "%s %s %s", m.Name, p.Name, r.Name)
					for _, g := range r.Groups {
						Expect(led).NotTo(ContainElement(g), "%s %s %s: group %s led twice", m.Name, p.Name, r.Name, g)
						led = append(led, g)
					}
					requests, cpu, peak = requests+r.Requests, cpu+r.CPUSeconds, max(peak, r.PeakRSSBytes)
				}
				Expect(requests).To(Equal(p.Requests), "%s %s", m.Name, p.Name)
				Expect(cpu).To(BeNumerically("~", p.CPUSeconds, 1e-6), "%s %s", m.Name, p.Name)
				Expect(peak).To(Equal(p.PeakRSSBytes), "%s %s", m.Name, p.Name)
			}
			Expect(m.Quiet).NotTo(BeNil(), m.Name)
			Expect(m.Quiet.WallSeconds).To(BeNumerically(">=", 2), m.Name)
			Expect(m.CPUSeconds).To(BeNumerically(">", 0), m.Name)
			Expect(m.PeakRSSBytes).To(BeNumerically(">", 1<<20), m.Name)
		}
		// All ran as kubeadm runs them (system:kube-controller-manager, each controller as
		// its own ServiceAccount): upstream, the reference, shows that its roles suffice.
		// kcm-groups' replicas, with config/controller-groups' Role, too.
		for _, name := range []string{"upstream", "kcm", "kcm-groups"} {
			logs, err := filepath.Glob(filepath.Join(logDir, "bench-logs", "*", name, name+"*.log"))
			Expect(err).NotTo(HaveOccurred())
			if name == "kcm-groups" {
				Expect(logs).To(HaveLen(3), "%s's replicas' logs", name)
			} else {
				Expect(logs).To(HaveLen(1), "%s's log", name)
			}
			for _, log := range logs {
				lines := forbiddenLines(log)
				Expect(lines).To(BeEmpty(), "%s's log %s has %d lines saying forbidden:\n%s",
					name, log, len(lines), strings.Join(lines[:min(len(lines), 30)], "\n"))
			}
		}
		Expect(res.GroupsGoals).NotTo(BeEmpty(), "issue 40's goals in the JSON")
		Expect(res.Ratio).To(HaveKey("create wallSeconds"))
		Expect(res.APIServerLimit.Pods).To(Equal(12))
	}, SpecTimeout(10*time.Minute))
})
