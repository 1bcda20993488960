package options

import "github.com/spf13/pflag"

// ControllerGroupsFlag is kcm's one flag of its own (issue 40), beside upstream's: a manifest
// written for upstream never sets it, so without it kcm stays upstream's drop-in.
const ControllerGroupsFlag = "controller-groups"

// ownFlags are the flags kcm adds to upstream's. Their help begins with ownFlagUsage, so that
// `kcm --help` tells them apart, and a comparison with upstream's flags (options_test.go,
// /flagz against upstream's) leaves exactly these out.
var ownFlags = []string{ControllerGroupsFlag}

// ownFlagUsage begins the help of every flag in ownFlags.
const ownFlagUsage = "kcm's own flag, not upstream's: "

// OwnFlagNames are the names of the flags kcm adds to upstream's.
func OwnFlagNames() []string { return append([]string(nil), ownFlags...) }

func (o *Options) addOwnFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ControllerGroups, ControllerGroupsFlag, "", ownFlagUsage+
		"spread the controllers that run over kcm's replicas in groups, each group led by one replica "+
		"at a time under its own Lease \"<leader-elect-resource-name>-<group>\" in the leader-election "+
		"namespace, every replica a candidate for every group. 'auto' is kcm's built-in split; "+
		"'name=controller,controller;name=controller,...' names the groups (group names are DNS-1123 labels "+
		"of at most 30 characters; controllers by name or upstream alias; every controller that runs in "+
		"exactly one group). Empty (the default): upstream's single Lease, one leader running every controller.")
}
