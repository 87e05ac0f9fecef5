#!/usr/bin/env bash
# Runs every sample (gnn, river, norm-block) on one or more devices and
# prints each run's digest; fails when a sample fails or when a sample's
# digest differs between the devices given. At the default size it also
# compares with the digest recorded in samples/<name>/digest.txt.
#
#   samples/run-all.sh [--large] <bin dir> [device...]
#
# <bin dir> holds xhal-gnn, xhal-river and xhal-norm-block (build/bin in a
# build tree). Each device is an XHAL_DEVICE selector (cpu, cuda:0,
# vulkan:0, ...); none given: the caller's XHAL_DEVICE (or the default
# device). XHAL_PLUGIN_PATH is passed through. --large runs the sizes for a
# GPU (samples/README.md lists them). Example, on a machine with a GPU:
#   XHAL_PLUGIN_PATH=build/lib samples/run-all.sh --large build/bin cpu cuda:0 vulkan:0
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
large=0
if [[ ${1:-} == --large ]]; then large=1; shift; fi
if [[ $# -lt 1 || ! -d $1 ]]; then
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2
  exit 2
fi
bin=$1; shift
devices=("$@")
((${#devices[@]})) || devices=("${XHAL_DEVICE:-}")

declare -A size=([gnn]="" [river]="" [norm-block]="")
if ((large)); then
  size=([gnn]="262144 5" [river]="20000 100" [norm-block]="32 256")
fi

logs=$(mktemp -d)
status=0
printf '%-11s %-10s %-12s %-24s %s\n' sample size device digest seconds
for sample in gnn river norm-block; do
  first=""
  for device in "${devices[@]}"; do
    log=$logs/$sample-${device//[^A-Za-z0-9]/_}.log
    start=$(date +%s%N)
    # shellcheck disable=SC2086 # the size is two words on purpose
    XHAL_DEVICE=$device "$bin/xhal-$sample" ${size[$sample]} >"$log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    last=$(tail -n 1 "$log")
    digest=${last#digest }
    if ((rc != 0)) || [[ $last != "digest "* ]]; then
      digest="FAILED(exit $rc)"
      status=1
      sed 's/^/    /' "$log" | tail -n 20 >&2
    fi
    printf '%-11s %-10s %-12s %-24s %d.%03d\n' "$sample" "${size[$sample]:-default}" \
      "${device:-default}" "$digest" $((ms / 1000)) $((ms % 1000))
    if [[ -z $first ]]; then
      first=$digest
    elif [[ $digest != "$first" ]]; then
      echo "  MISMATCH: $sample on ${device:-default} gives $digest, ${devices[0]:-default} gave $first" >&2
      status=1
    fi
    if ((!large)) && ((rc == 0)); then
      recorded=$(sed -n 's/^digest //p' "$here/$sample/digest.txt")
      if [[ $digest != "$recorded" ]]; then
        echo "  MISMATCH: $sample on ${device:-default} gives $digest, recorded $recorded" >&2
        status=1
      fi
    fi
  done
done
rm -rf "$logs"
if ((status)); then echo "run-all: FAILED" >&2; else echo "run-all: all digests agree"; fi
exit $status
