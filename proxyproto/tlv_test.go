package proxyproto_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicenet/sluice/proxyproto"
)

func TestTLVsLookup(t *testing.T) {
	tlvs := proxyproto.TLVs(allTLVs)
	for typ, want := range map[proxyproto.TLVType]string{
		proxyproto.TypeALPN:      "h2",
		proxyproto.TypeAuthority: "example.com",
		proxyproto.TypeNoop:      "\x00\x00", // the first of two
		proxyproto.TypeNetNS:     "blue",
		0xe0:                     "custom",
	} {
		v, ok := tlvs.Lookup(typ)
		require.True(t, ok, typ)
		require.Equal(t, want, string(v))
	}
	_, ok := tlvs.Lookup(proxyproto.TypeCRC32C)
	require.False(t, ok)
	_, ok = proxyproto.TLVs(nil).Lookup(proxyproto.TypeALPN)
	require.False(t, ok)
}

func TestTLVsAll(t *testing.T) {
	var types []proxyproto.TLVType
	for typ := range proxyproto.TLVs(allTLVs).All() {
		types = append(types, typ)
	}
	require.Equal(t, []proxyproto.TLVType{0x01, 0x02, 0x04, 0x05, 0x20, 0x30, 0xe0, 0x04}, types)

	types = types[:0]
	for typ := range proxyproto.TLVs(allTLVs).All() {
		types = append(types, typ)
		if typ == proxyproto.TypeAuthority {
			break
		}
	}
	require.Equal(t, []proxyproto.TLVType{0x01, 0x02}, types)

	cut := proxyproto.TLVs(tlv(0x01, "h2") + "\x02\x00\x09short")
	types = types[:0]
	for typ := range cut.All() {
		types = append(types, typ)
	}
	require.Equal(t, []proxyproto.TLVType{0x01}, types, "stops at a TLV that runs past the end")
}

func TestTLVsSSL(t *testing.T) {
	ssl, ok := proxyproto.TLVs(allTLVs).SSL()
	require.True(t, ok)
	require.Equal(t, uint8(proxyproto.ClientSSL|proxyproto.ClientCertConn|proxyproto.ClientCertSess), ssl.Client)
	require.Zero(t, ssl.Verify)
	for typ, want := range map[proxyproto.TLVType]string{
		proxyproto.SubtypeSSLVersion: "TLSv1.3",
		proxyproto.SubtypeSSLCN:      "client.example",
		proxyproto.SubtypeSSLCipher:  "TLS_AES_128_GCM_SHA256",
		proxyproto.SubtypeSSLSigAlg:  "RSA-SHA256",
		proxyproto.SubtypeSSLKeyAlg:  "RSA2048",
	} {
		v, ok := ssl.TLVs.Lookup(typ)
		require.True(t, ok, typ)
		require.Equal(t, want, string(v))
	}

	_, ok = proxyproto.TLVs(tlv(0x01, "h2")).SSL()
	require.False(t, ok, "no SSL TLV")
	_, ok = proxyproto.TLVs(tlv(0x20, "\x01\x00")).SSL()
	require.False(t, ok, "SSL TLV too short")
}

func TestTLVsAppend(t *testing.T) {
	tlvs, err := proxyproto.TLVs(nil).Append(proxyproto.TypeALPN, []byte("h2"))
	require.NoError(t, err)
	tlvs, err = tlvs.AppendSSL(proxyproto.SSL{Client: proxyproto.ClientSSL, Verify: 1,
		TLVs: proxyproto.TLVs(tlv(0x21, "TLSv1.2"))})
	require.NoError(t, err)
	require.Equal(t, tlv(0x01, "h2")+tlv(0x20, "\x01\x00\x00\x00\x01"+tlv(0x21, "TLSv1.2")), string(tlvs))

	longest := make([]byte, 0xffff)
	tlvs, err = proxyproto.TLVs(nil).Append(proxyproto.TypeNoop, longest)
	require.NoError(t, err)
	require.Len(t, tlvs, 3+0xffff)

	tlvs, err = proxyproto.TLVs("kept").Append(proxyproto.TypeNoop, append(longest, 0))
	require.ErrorIs(t, err, proxyproto.ErrInvalid)
	require.Equal(t, "kept", string(tlvs))
	tlvs, err = proxyproto.TLVs("kept").AppendSSL(proxyproto.SSL{TLVs: longest})
	require.ErrorIs(t, err, proxyproto.ErrInvalid)
	require.Equal(t, "kept", string(tlvs))
}
