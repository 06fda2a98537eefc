package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/plugintool"
)

// version is the release this binary is, set at link time by
// scripts/release.sh (-ldflags "-X main.version=v1.2.3"); empty for other
// builds, which report their module version or "devel".
var version string

// versionInfo is what weir version reports. It is a plain value.
type versionInfo struct {
	Version    string                  `json:"version"`
	Commit     string                  `json:"commit,omitempty"`
	Modified   bool                    `json:"modified,omitempty"`
	Go         string                  `json:"go"`
	Platform   string                  `json:"platform"`
	ABI        int                     `json:"abi"`
	TypedABI   int                     `json:"typed_abi"`
	SDK        string                  `json:"sdk"` // the embedded SDKs' content hash
	SDKs       []plugintool.SDKRelease `json:"sdks"`
	Toolchains []toolchainInfo         `json:"toolchains,omitempty"`
}

// toolchainInfo is one language's toolchain, or why there is none.
type toolchainInfo struct {
	plugintool.Toolchain
	Missing string `json:"missing,omitempty"`
}

// buildVersion gathers the binary's version from the link-time version
// and the build information the go command records.
func buildVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		ABI: abi.Version, TypedABI: abi.TypedVersion, SDK: plugintool.SDKVersion(), SDKs: plugintool.SDKReleases()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var asJSON, toolchains bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show weir's version, the ABI it speaks and the SDKs it carries",
		Long: `Show the binary's version and commit, the Go it was built with, the plugin
ABI versions it speaks, and the guest SDKs embedded in it (which weir plugin
new writes into new projects). With --toolchains, also the compiler each
plugin language would be built with, and why that one (for AssemblyScript,
as for a plugin in the current folder).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := buildVersion()
			if toolchains {
				wd, _ := os.Getwd() // AssemblyScript's compiler may be the current folder's
				tcs, errs := plugintool.Toolchains(cmd.Context(), wd)
				for i, tc := range tcs {
					ti := toolchainInfo{Toolchain: tc}
					if errs[i] != nil {
						ti.Missing = errs[i].Error()
					}
					v.Toolchains = append(v.Toolchains, ti)
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			printVersion(cmd.OutOrStdout(), v)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&toolchains, "toolchains", false, "also find each plugin language's toolchain")
	return cmd
}

func printVersion(w io.Writer, v versionInfo) {
	fmt.Fprintf(w, "weir %s\n", v.Version)
	if v.Commit != "" {
		mod := ""
		if v.Modified {
			mod = " (modified)"
		}
		fmt.Fprintf(w, "commit:  %s%s\n", v.Commit, mod)
	}
	fmt.Fprintf(w, "go:      %s %s\n", v.Go, v.Platform)
	fmt.Fprintf(w, "abi:     v%d (typed fields v%d)\n", v.ABI, v.TypedABI)
	fmt.Fprintf(w, "sdks:    embedded, %s\n", v.SDK)
	for _, s := range v.SDKs {
		ver := s.Version
		if ver == "" {
			ver = "(the binary's)"
		}
		fmt.Fprintf(w, "  %-15s %s\n", s.Lang, ver)
	}
	if len(v.Toolchains) > 0 {
		fmt.Fprintf(w, "toolchains:\n")
		for _, t := range v.Toolchains {
			if t.Missing != "" {
				fmt.Fprintf(w, "  %-15s missing: %s\n", t.Lang, t.Missing)
				continue
			}
			fmt.Fprintf(w, "  %-15s %s\n", t.Lang, t.Toolchain)
		}
	}
}
