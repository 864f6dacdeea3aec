// Command azurecatalog generates catalog/azure/skus.json, the embedded Azure VM SKU data.
//
// Offline source (no Azure subscription needed): a checkout of Azure/karpenter-provider-azure,
// whose generated files carry facts published from Azure's APIs:
//
//	pkg/fake/zz_generated.sku.<region>.go            Resource SKUs (capabilities, zones) of selected VM sizes
//	pkg/providers/pricing/zz_generated.pricing.go     on-demand prices per region and their date
//	pkg/utils/supported-gpus.yaml                     GPU sizes AKS supports and their manufacturer
//
// The output has one SKU per line so it diffs well.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/catalog/azure"
)

func main() {
	var (
		repo = flag.String("karpenter-repo", os.Getenv("KARPENTER_PROVIDER_AZURE"), "checkout of Azure/karpenter-provider-azure")
		out  = flag.String("o", "skus.json", "output file")
	)
	flag.Parse()
	if err := run(*repo, *out); err != nil {
		fmt.Fprintln(os.Stderr, "azurecatalog:", err)
		os.Exit(1)
	}
}

func run(repo, out string) error {
	if repo == "" {
		return fmt.Errorf("-karpenter-repo (or $KARPENTER_PROVIDER_AZURE) is required")
	}
	skuFiles, err := filepath.Glob(filepath.Join(repo, "pkg/fake/zz_generated.sku.*.go"))
	if err != nil || len(skuFiles) == 0 {
		return fmt.Errorf("no pkg/fake/zz_generated.sku.*.go under %s", repo)
	}
	data := &azure.Data{GPUSKUs: map[string]string{}}
	byName := map[string]*azure.SKU{}
	for _, f := range skuFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		skus, date, err := parseSKUs(string(src))
		if err != nil {
			return fmt.Errorf("parsing %s: %w", filepath.Base(f), err)
		}
		if date.After(data.SKUsDate) {
			data.SKUsDate = date
		}
		for _, s := range skus {
			if prev, ok := byName[s.Name]; ok {
				prev.Zones = union(prev.Zones, s.Zones)
				continue
			}
			byName[s.Name] = s
		}
	}
	pricing, err := os.ReadFile(filepath.Join(repo, "pkg/providers/pricing/zz_generated.pricing.go"))
	if err != nil {
		return err
	}
	prices, date, err := parsePrices(string(pricing))
	if err != nil {
		return fmt.Errorf("parsing pricing: %w", err)
	}
	data.PricesDate = date
	gpus, err := os.ReadFile(filepath.Join(repo, "pkg/utils/supported-gpus.yaml"))
	if err != nil {
		return err
	}
	var gpuTable map[string]struct {
		GPU string `json:"gpu"`
	}
	if err := yaml.Unmarshal(gpus, &gpuTable); err != nil {
		return fmt.Errorf("parsing supported-gpus.yaml: %w", err)
	}
	for name, info := range gpuTable {
		data.GPUSKUs[strings.ToLower(name)] = info.GPU
	}
	for name, s := range byName {
		for region, table := range prices {
			if p, ok := table[name]; ok {
				if s.OnDemandPrices == nil {
					s.OnDemandPrices = map[string]float64{}
				}
				s.OnDemandPrices[region] = p
			}
		}
		data.SKUs = append(data.SKUs, s)
	}
	sort.Slice(data.SKUs, func(i, j int) bool { return data.SKUs[i].Name < data.SKUs[j].Name })
	data.Source = "Azure/karpenter-provider-azure pkg/fake/zz_generated.sku.*.go, pkg/providers/pricing/zz_generated.pricing.go, pkg/utils/supported-gpus.yaml"
	return write(out, data)
}

var (
	generatedAt = regexp.MustCompile(`generated at (\S+)`)
	skuStart    = regexp.MustCompile(`^\s*Name:\s+lo\.ToPtr\("([^"]+)"\),`)
	skuFamily   = regexp.MustCompile(`^\s*Family:\s+lo\.ToPtr\("([^"]+)"\),`)
	capability  = regexp.MustCompile(`\{Name: lo\.ToPtr\("([^"]+)"\), Value: lo\.ToPtr\("([^"]*)"\)\}`)
	zoneLine    = regexp.MustCompile(`^\s*"([0-9])",\s*$`)
	priceRegion = regexp.MustCompile(`initialOnDemandPrices\["([^"]+)"\] = map`)
	priceLine   = regexp.MustCompile(`^\s*"([^"]+)":\s+([0-9.]+),`)
)

// parseSKUs reads the ResourceSkus literal of one region, line by line: a SKU starts at its Name,
// collects its capabilities and, after LocationInfo, its zones.
func parseSKUs(src string) ([]*azure.SKU, time.Time, error) {
	date, err := parseDate(src)
	if err != nil {
		return nil, date, err
	}
	var out []*azure.SKU
	var cur *azure.SKU
	for _, line := range strings.Split(src, "\n") {
		if m := skuStart.FindStringSubmatch(line); m != nil {
			cur = &azure.SKU{Name: m[1], Capabilities: map[string]string{}}
			out = append(out, cur)
			continue
		}
		if cur == nil {
			continue
		}
		if m := skuFamily.FindStringSubmatch(line); m != nil {
			cur.Family = m[1]
		} else if m := capability.FindStringSubmatch(line); m != nil {
			cur.Capabilities[m[1]] = m[2]
		} else if m := zoneLine.FindStringSubmatch(line); m != nil {
			cur.Zones = union(cur.Zones, []string{m[1]})
		}
	}
	if len(out) == 0 {
		return nil, date, fmt.Errorf("no SKUs found")
	}
	for _, s := range out {
		if s.VCPU() == 0 || s.MemoryGiB() == 0 {
			return nil, date, fmt.Errorf("%s has no vCPUs or MemoryGB capability", s.Name)
		}
	}
	return out, date, nil
}

// parsePrices reads initialOnDemandPrices: region → size → USD per hour.
func parsePrices(src string) (map[string]map[string]float64, time.Time, error) {
	date, err := parseDate(src)
	if err != nil {
		return nil, date, err
	}
	out := map[string]map[string]float64{}
	var cur map[string]float64
	for _, line := range strings.Split(src, "\n") {
		if m := priceRegion.FindStringSubmatch(line); m != nil {
			cur = map[string]float64{}
			out[m[1]] = cur
			continue
		}
		if m := priceLine.FindStringSubmatch(line); m != nil && cur != nil {
			p, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return nil, date, fmt.Errorf("price of %s: %w", m[1], err)
			}
			cur[m[1]] = p
		}
	}
	if len(out) == 0 {
		return nil, date, fmt.Errorf("no regions found")
	}
	return out, date, nil
}

func parseDate(src string) (time.Time, error) {
	m := generatedAt.FindStringSubmatch(src)
	if m == nil {
		return time.Time{}, fmt.Errorf("no 'generated at' date")
	}
	return time.Parse(time.RFC3339, m[1])
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// write prints one SKU per line.
func write(path string, d *azure.Data) error {
	var b strings.Builder
	header, err := json.Marshal(map[string]any{"source": d.Source, "skusDate": d.SKUsDate, "pricesDate": d.PricesDate, "gpuSKUs": d.GPUSKUs})
	if err != nil {
		return err
	}
	b.WriteString(strings.TrimSuffix(string(header), "}"))
	b.WriteString(`,"skus":[` + "\n")
	for i, s := range d.SKUs {
		line, err := json.Marshal(s)
		if err != nil {
			return err
		}
		b.Write(line)
		if i < len(d.SKUs)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]}\n")
	var check azure.Data
	if err := json.Unmarshal([]byte(b.String()), &check); err != nil {
		return fmt.Errorf("generated file does not parse: %w", err)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
