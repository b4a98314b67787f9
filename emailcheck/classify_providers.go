package emailcheck

// providerSpec describes one mailbox provider or mail gateway: the display
// name reported as provider.name, how it treats sub-address tags, the
// domains its MX hosts live under, and its own consumer domains.
type providerSpec struct {
	name string
	rule aliasRule
	// mx are MX host suffixes: a host matches when it equals an entry or
	// ends with "." followed by the entry.
	mx []string
	// domains are mailbox domains the provider owns, recognised even when
	// their MX hosts are not known.
	domains []string
}

// providerSpecs returns the provider table. It is a function, not a package
// variable, so that the table cannot be changed at run time; newClassifier
// indexes it once.
func providerSpecs() []providerSpec {
	return []providerSpec{
		{
			name:    "Google",
			rule:    aliasRulePlus, // Google Workspace; consumer Gmail is set apart
			mx:      []string{"google.com", "googlemail.com"},
			domains: gmailDomains(),
		},
		{
			name: "Microsoft",
			rule: aliasRulePlus,
			// Microsoft 365 (tenant.mail.protection.outlook.com), consumer
			// Outlook.com (hotmail-com.olc.protection.outlook.com), the
			// 21Vianet and US government clouds.
			mx: []string{"outlook.com", "hotmail.com", "outlook.cn", "office365.us"},
			domains: []string{
				"outlook.com", "hotmail.com", "live.com", "msn.com",
				"hotmail.co.uk", "hotmail.fr", "hotmail.de", "hotmail.it", "hotmail.es",
				"live.co.uk", "live.fr", "live.nl", "outlook.fr", "outlook.de",
			},
		},
		{
			name: "Yahoo",
			rule: aliasRuleDash,
			mx:   []string{"yahoodns.net"},
			// yahoo.<suffix> is matched by rule, see providerOf.
			domains: []string{"ymail.com", "rocketmail.com"},
		},
		{
			name:    "Apple iCloud",
			rule:    aliasRulePlus,
			mx:      []string{"icloud.com"},
			domains: []string{"icloud.com", "me.com", "mac.com"},
		},
		{
			name:    "Proton",
			rule:    aliasRulePlus,
			mx:      []string{"protonmail.ch"},
			domains: []string{"proton.me", "protonmail.com", "protonmail.ch", "pm.me"},
		},
		{
			name:    "Fastmail",
			rule:    aliasRulePlus,
			mx:      []string{"messagingengine.com"},
			domains: []string{"fastmail.com", "fastmail.fm"},
		},
		{
			name: "Zoho",
			rule: aliasRulePlus,
			mx: []string{
				"zoho.com", "zoho.eu", "zoho.in", "zoho.com.au", "zoho.jp",
				"zoho.com.cn", "zoho.sa", "zohocloud.ca", "zohomail.com",
			},
			domains: []string{"zoho.com", "zohomail.com"},
		},
		{
			name:    "Yandex",
			mx:      []string{"yandex.net", "yandex.ru"},
			domains: yandexDomains(),
		},
		{
			name:    "Mail.ru",
			mx:      []string{"mail.ru"},
			domains: []string{"mail.ru", "inbox.ru", "list.ru", "bk.ru"},
		},
		{
			name:    "GMX",
			mx:      []string{"gmx.net", "gmx.com"},
			domains: []string{"gmx.net", "gmx.de", "gmx.com", "gmx.at", "gmx.ch"},
		},
		{name: "WEB.DE", mx: []string{"web.de"}, domains: []string{"web.de"}},
		{name: "mail.com", mx: []string{"mail.com"}, domains: []string{"mail.com"}},
		{
			name: "IONOS",
			mx: []string{
				"kundenserver.de", "ionos.com", "ionos.de", "ionos.co.uk",
				"ionos.fr", "ionos.es",
			},
		},
		{
			name:    "Tuta",
			mx:      []string{"tutanota.de"},
			domains: []string{"tuta.com", "tuta.io", "tutanota.com", "tutanota.de", "tutamail.com"},
		},
		{name: "Tencent", mx: []string{"qq.com"}, domains: []string{"qq.com"}},
		{name: "NetEase", mx: []string{"netease.com"}, domains: []string{"163.com", "126.com"}},
		{name: "Naver", mx: []string{"naver.com"}, domains: []string{"naver.com"}},
		{name: "Seznam", mx: []string{"seznam.cz"}, domains: []string{"seznam.cz"}},
		{name: "mailbox.org", mx: []string{"mailbox.org"}, domains: []string{"mailbox.org"}},
		{name: "Posteo", mx: []string{"posteo.de"}, domains: []string{"posteo.de"}},
		{name: "Infomaniak", mx: []string{"infomaniak.ch"}},
		{name: "Migadu", mx: []string{"migadu.com"}},
		{name: "Rackspace", mx: []string{"emailsrvr.com"}},
		{name: "GoDaddy", mx: []string{"secureserver.net"}},
		{name: "Namecheap", mx: []string{"privateemail.com"}},
		{name: "OVHcloud", mx: []string{"ovh.net"}},
		{name: "Gandi", mx: []string{"gandi.net"}},
		{name: "Titan", mx: []string{"titan.email"}},
		{name: "Hostinger", mx: []string{"hostinger.com"}},

		// Gateways and forwarding services: mail passes through them to a
		// mailbox elsewhere, so their sub-addressing rule is not known.
		{name: "Mimecast", mx: []string{"mimecast.com", "mimecast.co.za", "mimecast-offshore.com"}},
		{name: "Proofpoint", mx: []string{"pphosted.com", "ppe-hosted.com"}},
		{name: "Barracuda", mx: []string{"barracudanetworks.com"}},
		{name: "Cisco Secure Email", mx: []string{"iphmx.com"}},
		{name: "Symantec", mx: []string{"messagelabs.com"}},
		{name: "Trend Micro", mx: []string{"trendmicro.com", "trendmicro.eu"}},
		{name: "Sophos", mx: []string{"sophos.com"}},
		{name: "Hornetsecurity", mx: []string{"hornetsecurity.com"}},
		{name: "Forcepoint", mx: []string{"mailcontrol.com"}},
		{name: "Mailgun", mx: []string{"mailgun.org"}},
		{name: "SendGrid", mx: []string{"sendgrid.net"}},
		{name: "Postmark", mx: []string{"postmarkapp.com"}},
		{name: "Cloudflare", mx: []string{"mx.cloudflare.net"}},
		{name: "ImprovMX", mx: []string{"improvmx.com"}},
		{name: "Amazon SES", mx: amazonInboundHosts()},
	}
}

// amazonInboundHosts lists the receiving endpoints of Amazon SES and Amazon
// WorkMail (inbound-smtp.<region>.amazonaws.com). Only those hosts are
// matched, not all of amazonaws.com, where anyone can run a mail server.
func amazonInboundHosts() []string {
	regions := []string{
		"us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1",
		"eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1", "eu-north-1",
		"ap-south-1", "ap-southeast-1", "ap-southeast-2", "ap-northeast-1",
		"ap-northeast-2", "ap-northeast-3", "sa-east-1",
	}
	hosts := make([]string, len(regions))
	for i, r := range regions {
		hosts[i] = "inbound-smtp." + r + ".amazonaws.com"
	}
	return hosts
}

// gmailDomains are the consumer Gmail domains: the only ones where Google
// ignores dots in the local part.
func gmailDomains() []string { return []string{"gmail.com", "googlemail.com"} }

func yandexDomains() []string {
	return []string{
		"yandex.ru", "yandex.com", "ya.ru", "yandex.by", "yandex.kz",
		"yandex.ua", "yandex.com.tr",
	}
}

// equivalentGroups are sets of domains that deliver to the same mailbox:
// user@a and user@b reach one account for any two members. Microsoft's
// outlook.com, hotmail.com and live.com are separate namespaces and are not
// a group.
func equivalentGroups() [][]string {
	return [][]string{
		gmailDomains(),
		{"icloud.com", "me.com", "mac.com"},
		{"proton.me", "protonmail.com", "protonmail.ch", "pm.me"},
		yandexDomains(),
	}
}

// sharedMailHosts are the registrable domains of MX hosts that serve many
// unrelated domains and are not in the provider table: web hosts, mail
// hosts and forwarding services. One of their addresses serving a burner
// says nothing about the other domains it serves.
func sharedMailHosts() []string {
	return []string{
		"forwardemail.net", "mxroute.com", "purelymail.com",
		"websitewelcome.com", "hostgator.com", "bluehost.com", "dreamhost.com",
		"mailspamprotection.com", "siteground.net", "one.com", "strato.de",
		"your-server.de", "kasserver.com", "netcup.net", "mailbox.org",
		"hostinger.com", "beget.com", "timeweb.ru", "pair.com", "mxlogin.com",
		"zoho.com", "yandex.net", "arsmtp.com", "mailchannels.net",
	}
}
