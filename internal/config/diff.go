package config

import (
	"reflect"
	"strings"
)

// ChangedKeys returns the keys whose values differ between a and b, as
// dotted TOML keys ("log_level", "registry.hosts_dir"), in the order of
// the Config struct.
func ChangedKeys(a, b Config) []string {
	var keys []string
	changedKeys(reflect.ValueOf(a), reflect.ValueOf(b), "", &keys)
	return keys
}

func changedKeys(a, b reflect.Value, prefix string, keys *[]string) {
	t := a.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		key := prefix + name
		fa, fb := a.Field(i), b.Field(i)
		if fa.Kind() == reflect.Struct {
			changedKeys(fa, fb, key+".", keys)
			continue
		}
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			*keys = append(*keys, key)
		}
	}
}
