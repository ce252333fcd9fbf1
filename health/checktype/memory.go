package checktype

import (
	"github.com/vitalsproject/vitals/health/checks"
)

// memoryType declares the memory check type.
func memoryType() Type {
	return Type{
		Name: "memory", Args: []string{"limit_mib"},
		Doc: "the memory cgroup of the checking process (v2 `memory.current`, v1 `memsw`/`usage_in_bytes`), or its RSS, uses at most `limit_mib` MiB",
		Options: []Option{
			{Name: "limit_mib", Kind: Int, Required: true, Arg: "MIB", Doc: "most MiB allowed; -1 disables the check"},
			{Name: "source", Default: string(checks.MemoryCgroup), Arg: "SOURCE", Doc: "`cgroup` or `rss` (of the checking process)",
				Aliases: []Alias{{Name: "rss", Value: string(checks.MemoryRSS), Deprecated: true}}},
			{Name: "cgroup_path", Arg: "DIR", Doc: "cgroup directory (found from /proc/self/cgroup when empty)",
				Aliases: []Alias{{Name: "cg_path", Deprecated: true}}},
		},
		New: func(v *Values) (checks.Func, error) {
			return checks.Memory(checks.MemoryOptions{LimitMiB: v.Int("limit_mib"), Source: checks.MemorySource(v.String("source")),
				CgroupPath: v.String("cgroup_path")})
		},
	}
}
