package linear

// A student's copy of lessons/ for the bad inputs of mhalab lessons grade (badinput_test.go).
