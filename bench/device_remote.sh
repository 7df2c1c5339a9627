#!/usr/bin/env bash
# Issue 30 on the GPU machine: an OpenSSH server unpacked from carried .deb files (dpkg -x into a prefix,
# nothing installed into /), `ptprof record --host 127.0.0.1` of a real CUDA training script through it with
# GPU samples from nvidia-smi, the bundle fetched back. Run from a copy of the repo root with $OUT set and
# the .deb files in ./debs (apt-get download openssh-server openssh-client openssh-sftp-server + libs).
set -u
export PYTHONUNBUFFERED=1
P=/tmp/sshprefix; K=/tmp/sshkeys; W=/tmp/sshwrap; mkdir -p $P $K $W
for d in debs/*.deb; do dpkg -x "$d" $P; done
LIBS=$P/usr/lib/x86_64-linux-gnu:$P/lib/x86_64-linux-gnu
for t in ssh ssh-keygen ssh-keyscan; do  # the carried libs only where the system lacks one
  if ldd $P/usr/bin/$t | grep -q "not found"; then L="LD_LIBRARY_PATH=$LIBS "; else L=""; fi
  printf '#!/bin/sh\n%sexec %s "$@"\n' "$L" "$P/usr/bin/$t" > $W/$t; chmod +x $W/$t
done
export PATH=$W:$PATH
SSHD_ENV=""; ldd $P/usr/sbin/sshd | grep "not found" && SSHD_ENV="LD_LIBRARY_PATH=$LIBS"
id sshd >/dev/null 2>&1 || useradd -r -M -d /run/sshd -s /usr/sbin/nologin sshd 2>/dev/null \
  || echo "sshd:x:74:65534::/run/sshd:/usr/sbin/nologin" >> /etc/passwd
mkdir -p -m 755 /run/sshd
env LD_LIBRARY_PATH=$LIBS ldd $P/usr/sbin/sshd | grep "not found"
ssh-keygen -q -t ed25519 -N '' -f $K/hk && ssh-keygen -q -t ed25519 -N '' -f $K/ck && cp $K/ck.pub $K/ak
cat > $K/sshd_config <<CFG
ListenAddress 127.0.0.1
HostKey $K/hk
AuthorizedKeysFile $K/ak
PidFile $K/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
PermitRootLogin yes
UseDNS no
CFG
env $SSHD_ENV $P/usr/sbin/sshd -D -e -f $K/sshd_config -p 2222 > $OUT/sshd.log 2>&1 &
echo "[127.0.0.1]:2222 $(cut -d' ' -f1,2 $K/hk.pub)" > $K/kh
printf 'Host 127.0.0.1\n  Port 2222\n  IdentityFile %s/ck\n  IdentitiesOnly yes\n  UserKnownHostsFile %s/kh\n' $K $K > $K/cfg
sleep 1
ssh -F $K/cfg -o BatchMode=yes 127.0.0.1 'echo login ok; uname -r; command -v nvidia-smi; nvidia-smi -L' 2>&1
PY=$(command -v python3)
E=resources/examples/train_small.py; A=${A:-"--steps 400 --width 2048 --batch 2048"}
t0=$(date +%s%N)
timeout 110 python3 -m core.cli -v record --host 127.0.0.1 --ssh-config $K/cfg --python $PY --cwd $PWD \
  --out /tmp/rb --wait 5 --warmup 2 --active 5 $E $A 2>&1 | grep -v "^step\|USDT\|CPUAllocator" | tail -25
echo "remote record wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
t0=$(date +%s%N)
timeout 60 python3 -m core.cli record --quiet --out /tmp/lb --wait 5 --warmup 2 --active 5 $E $A 2>&1 | tail -3
echo "local record wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
du -sb /tmp/rb; ls -la /tmp/rb /tmp/rb/traces; head -3 /tmp/rb/nvml.csv; wc -l /tmp/rb/nvml.csv /tmp/lb/nvml.csv
python3 -c "
import json; r=json.load(open('/tmp/rb/run.json')); print({k: r.get(k) for k in ('status','steps','cycles','traces','gpu','nvml','duration_s')})"
python3 -m core.cli info /tmp/rb --no-cache 2>&1 | head -20
tar czf $OUT/remote_bundle.tar.gz -C /tmp rb
