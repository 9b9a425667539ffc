#!/usr/bin/env bash
# Fails when git tracks a compiled program (ELF, Mach-O or PE, by their magic numbers) or a file
# over 2 MiB: builds belong in bin/ and dist/, which git ignores, and a committed binary stays
# in every clone's history for good. One perl process reads every file's first bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z | perl -0 -ne '
  BEGIN { $status = 0; $limit = 2 * 1024 * 1024 }
  chomp; next if -l $_ || ! -f _;
  open(my $fh, "<:raw", $_) or die "$_: $!\n"; read($fh, my $magic, 4); close $fh;
  my $kind = $magic eq "\x7fELF" ? "an ELF executable"
    : $magic =~ /^(\xcf\xfa\xed\xfe|\xce\xfa\xed\xfe|\xfe\xed\xfa\xce|\xfe\xed\xfa\xcf|\xca\xfe\xba\xbe)$/ ? "a Mach-O executable"
    : substr($magic, 0, 2) eq "MZ" ? "a PE (Windows) executable"
    : (-s $_) > $limit ? (-s _) . " bytes, over the 2 MiB limit" : "";
  if ($kind ne "") {
    print "committed binary: $_ is $kind; remove it (git rm --cached $_) and build it into bin/ instead\n";
    $status = 1;
  }
  END { exit $status }'
