package systemd

import "testing"

func TestContainerMachineID(t *testing.T) {
	const id = "BE84194D87F908C2B2E167311F4409F5aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	for _, tc := range []struct {
		env  []string
		want string
		bad  bool
	}{
		{nil, "be84194d87f908c2b2e167311f4409f5", false},
		{[]string{"A=1"}, "be84194d87f908c2b2e167311f4409f5", false},
		{[]string{"container_uuid=0123456789abcdef0123456789ABCDEF"}, "0123456789abcdef0123456789abcdef", false},
		{[]string{"container_uuid=01234567-89ab-cdef-0123-456789abcdef"}, "0123456789abcdef0123456789abcdef", false},
		// The first one wins, as getenv(3) finds it.
		{[]string{"container_uuid=11111111111111111111111111111111", "container_uuid=22222222222222222222222222222222"}, "11111111111111111111111111111111", false},
		{[]string{"container_uuid=xyz"}, "", true},
		{[]string{"container_uuid=0123456789abcdef0123456789abcdeg"}, "", true},
		{[]string{"container_uuid=00000000-0000-0000-0000-000000000000"}, "", true},
		{[]string{"container_uuid=0123456789-abcdef0123456789abcdef"}, "", true},
	} {
		got, err := ContainerMachineID(id, tc.env)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%v: %q, %v; want %q (error %v)", tc.env, got, err, tc.want, tc.bad)
		}
	}
	if _, err := ContainerMachineID("abc", nil); err == nil {
		t.Error("a short container ID gave a machine ID")
	}
	if got := UUID("be84194d87f908c2b2e167311f4409f5"); got != "be84194d-87f9-08c2-b2e1-67311f4409f5" {
		t.Errorf("UUID: %s", got)
	}
}
