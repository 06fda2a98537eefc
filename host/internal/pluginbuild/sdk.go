package pluginbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	weir "github.com/weir-stream/weir"
)

// The SDKs a plugin builds against come embedded in the binary (package
// weir's SDKFiles), laid out per language the way a plugin project holds
// them in its weir-sdk folder:
//
//   - go: a module of its own, github.com/weir-stream/weir, holding only the
//     Go SDK (guest-sdk/go) and the ABI packages it imports (abi,
//     abi/wjson), with no requirements: a plugin's go.mod replaces the
//     module by this folder and needs no network and no go.sum;
//   - rust: the weir crate (Cargo.toml and src), a path dependency;
//   - c: weir.h and weir.c;
//   - assemblyscript: the package (lib, exports.ts, asconfig.plugin.json),
//     which a plugin's asconfig.json extends.
//
// A folder of plugin source without the SDK builds against a copy
// extracted once into the cache directory, under sdk/<SDKVersion()>/<lang>.

// SDKDirName is the folder of a plugin project holding its copy of the
// SDK, as `weir plugin new` writes it.
const SDKDirName = "weir-sdk"

// SDKGoDirective is the go line of the Go SDK module and of the go.mod
// weir writes for a plugin: the oldest Go that builds the SDK
// (go:wasmexport and -buildmode=c-shared for wasip1 came with Go 1.24).
const SDKGoDirective = "1.24"

// sdkModule is the module path of the extracted Go SDK: the weir module's
// own, so that plugins import the SDK by the same paths in and out of a
// checkout.
const sdkModule = weirModule

// sdkLayout maps, per language, folders of SDKFiles to folders of the
// laid-out SDK.
var sdkLayout = map[Lang][][2]string{
	LangGo:             {{"abi", "abi"}, {"guest-sdk/go", "guest-sdk/go"}},
	LangRust:           {{"guest-sdk/rust", ""}},
	LangC:              {{"guest-sdk/c", ""}},
	LangAssemblyScript: {{"guest-sdk/assemblyscript", ""}},
}

var sdkVersion = sync.OnceValue(func() string {
	h := sha256.New()
	fs.WalkDir(weir.SDKFiles, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := weir.SDKFiles.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
})

// SDKVersion names the embedded SDKs: a hash of their files, the same for
// every binary built from the same sources.
func SDKVersion() string { return sdkVersion() }

// sdkFiles lists the files of lang's SDK as a map from their path in the
// laid-out SDK (slash-separated) to their path in SDKFiles. Go test files
// are left out.
func sdkFiles(lang Lang) (map[string]string, error) {
	layout, ok := sdkLayout[lang]
	if !ok {
		return nil, fmt.Errorf("no embedded SDK for %q", lang)
	}
	files := map[string]string{}
	for _, m := range layout {
		err := fs.WalkDir(weir.SDKFiles, m[0], func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
				return err
			}
			files[path.Join(m[1], strings.TrimPrefix(p, m[0]+"/"))] = p
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// WriteSDK writes the embedded SDK of lang into dir, laid out as above,
// with a go.mod for Go, and a WEIR-SDK file naming the version. It
// overwrites the files it writes and leaves others alone.
func WriteSDK(lang Lang, dir string) error {
	files, err := sdkFiles(lang)
	if err != nil {
		return err
	}
	if lang == LangGo {
		files["go.mod"] = ""
	}
	for dst, src := range files {
		b := []byte(sdkGoMod)
		if src != "" {
			if b, err = weir.SDKFiles.ReadFile(src); err != nil {
				return err
			}
		}
		out := filepath.Join(dir, filepath.FromSlash(dst))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
	}
	stamp := "weir " + string(lang) + " SDK " + SDKVersion() + "\nWritten by weir from the SDK embedded in it; weir plugin new writes it again.\n"
	return os.WriteFile(filepath.Join(dir, "WEIR-SDK"), []byte(stamp), 0o644)
}

// sdkGoMod is the go.mod of the extracted Go SDK: no requirements.
const sdkGoMod = "module " + sdkModule + "\n\ngo " + SDKGoDirective + "\n"

// sdkExtract serialises extractions within the process; across processes
// the rename into place makes them safe.
var sdkExtract sync.Mutex

// ExtractedSDK returns the folder under cacheDir (empty for the default)
// holding lang's embedded SDK, extracting it on first use.
func ExtractedSDK(cacheDir string, lang Lang) (string, error) {
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	dir := filepath.Join(cacheDir, "sdk", SDKVersion(), string(lang))
	sdkExtract.Lock()
	defer sdkExtract.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "WEIR-SDK")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("extracting the %s SDK: %w", lang, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".extract-*")
	if err != nil {
		return "", fmt.Errorf("extracting the %s SDK: %w", lang, err)
	}
	defer os.RemoveAll(tmp)
	if err := WriteSDK(lang, tmp); err != nil {
		return "", fmt.Errorf("extracting the %s SDK: %w", lang, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "WEIR-SDK")); serr == nil {
			return dir, nil // another process extracted it first
		}
		return "", fmt.Errorf("extracting the %s SDK: %w", lang, err)
	}
	return dir, nil
}

// SDKRelease is the version one embedded SDK declares for itself.
type SDKRelease struct {
	Lang    Lang   `json:"lang"`
	Version string `json:"version"` // as its package file gives it; "" for none
}

// sdkVersionRE finds the first version field of a Cargo.toml or a
// package.json.
var sdkVersionRE = regexp.MustCompile(`(?m)^\s*"?version"?\s*[=:]\s*"([^"]+)"`)

// SDKReleases lists the embedded SDKs with the versions their package
// files declare (the Rust crate's and the AssemblyScript package's); the
// Go and C SDKs have none of their own and go with the binary's.
func SDKReleases() []SDKRelease {
	files := map[Lang]string{LangRust: "guest-sdk/rust/Cargo.toml", LangAssemblyScript: "guest-sdk/assemblyscript/package.json"}
	var out []SDKRelease
	for _, l := range Langs() {
		r := SDKRelease{Lang: l}
		if f, ok := files[l]; ok {
			if b, err := weir.SDKFiles.ReadFile(f); err == nil {
				if m := sdkVersionRE.FindSubmatch(b); m != nil {
					r.Version = string(m[1])
				}
			}
		}
		out = append(out, r)
	}
	return out
}
