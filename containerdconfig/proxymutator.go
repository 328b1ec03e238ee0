package containerdconfig

import (
	"context"
	"reflect"
)

var (
	_ Mutator = (*InstallProxyPlugin)(nil)
	_ Mutator = (*UninstallProxyPlugin)(nil)
)

// InstallProxyPlugin registers a proxy plugin, such as the sandbox
// controller daemon of a sandboxer shim. It goes where Install puts a
// handler: a drop-in of its own (shimkit-proxy.<name>.toml) when the config
// imports a drop-in directory on schema 3 and up, the config file (or
// template) otherwise.
//
// A sandboxer shim needs both the plugin and a handler naming it; apply
// both Mutators, restart containerd once, then commit (or roll back) both
// Changes, the later one first.
type InstallProxyPlugin struct {
	Target Target
	Plugin ProxyPlugin
}

// NewInstallProxyPlugin returns a Mutator that registers p on the target.
func NewInstallProxyPlugin(t Target, p ProxyPlugin) *InstallProxyPlugin {
	return &InstallProxyPlugin{Target: t, Plugin: p}
}

// Apply registers the proxy plugin. A plugin of that name that shimkit did
// not write, in the edited file or in another file containerd merges with
// it (the root config, the other drop-ins of the directory), is never taken
// over: identical, nothing changes; different, the error wraps ErrConflict
// and names that file and the plugin. Bad input returns an error naming the
// file, line and key, and no file is touched.
func (i *InstallProxyPlugin) Apply(ctx context.Context) (*Change, error) {
	if err := i.Plugin.Validate(); err != nil {
		return nil, err
	}
	return i.Target.apply(ctx, proxySubject(i.Plugin.Name), func(p plan, data []byte) ([]byte, bool, error) {
		blocks, err := findBlocks(p.nodePath, data, scan(data))
		if err != nil {
			return nil, false, err
		}
		if _, ours := blockByID(blocks, proxyID(i.Plugin.Name)); !ours {
			defined, err := i.Target.proxyElsewhere(p, i.Plugin)
			if err != nil || defined {
				return data, false, err // someone else's, as asked: nothing to do
			}
		}
		return addProxyPlugin(p.nodePath, data, i.Plugin, p.opts)
	})
}

// UninstallProxyPlugin removes a proxy plugin that shimkit registered.
type UninstallProxyPlugin struct {
	Target Target
	Name   string
}

// NewUninstallProxyPlugin returns a Mutator that removes the proxy plugin
// name, leaving the files as they were before it was installed.
func NewUninstallProxyPlugin(t Target, name string) *UninstallProxyPlugin {
	return &UninstallProxyPlugin{Target: t, Name: name}
}

// Apply removes the proxy plugin. One shimkit did not write is left alone
// and the Change reports nothing changed.
func (u *UninstallProxyPlugin) Apply(ctx context.Context) (*Change, error) {
	return u.Target.apply(ctx, proxySubject(u.Name), func(p plan, data []byte) ([]byte, bool, error) {
		return RemoveProxyPlugin(p.nodePath, data, u.Name)
	})
}

// ProxyPluginFile returns the node path of the file an edit for the proxy
// plugin name goes to, so that a caller can record it before the edit for
// crash recovery (see Restore).
func (t Target) ProxyPluginFile(name string) (string, error) {
	p, err := t.planFor(proxySubject(name))
	if err != nil {
		return "", err
	}
	return p.nodePath, nil
}

// proxyElsewhere checks the files containerd merges with the one the edit
// goes to: the root config when the edit goes to a drop-in or template,
// and the other files the drop-in's import pattern matches. A definition
// of the plugin there that shimkit did not write is reported as defined
// when it is the one asked for, and as ErrConflict otherwise. (A file
// holding shimkit's own block for it, such as the config k3s renders from
// the template, does not count.)
func (t Target) proxyElsewhere(p plan, pp ProxyPlugin) (defined bool, err error) {
	others, err := t.mergedWith(p)
	if err != nil {
		return false, err
	}
	for _, np := range others {
		data, ok, err := readOptional(t.LocalPath(np))
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		cfg, err := Parse(np, data)
		if err != nil {
			return false, err
		}
		got := lookup(cfg.tree, proxyKey(pp.Name))
		if got == nil {
			continue
		}
		exprs := scan(data)
		blocks, err := findBlocks(np, data, exprs)
		if err != nil {
			return false, err
		}
		if _, ours := blockByID(blocks, proxyID(pp.Name)); ours {
			continue
		}
		_, want, err := desiredProxy(detectStyle(data), pp)
		if err != nil {
			return false, &FileError{Path: np, Err: err}
		}
		if !reflect.DeepEqual(got, any(want)) {
			return false, foreignProxy(np, exprs, pp.Name)
		}
		defined = true
	}
	return defined, nil
}
